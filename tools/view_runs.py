#!/usr/bin/env python3
"""view_runs.py: a live view of gpt2_ddp runs in the browser, as
`tensorboard --logdir` is for TensorBoard. It serves, on 127.0.0.1, one
page that lists the runs found under the given paths (directories holding
a metrics.jsonl) and draws their train loss (raw and smoothed), validation
loss, HellaSwag, learning rate and tokens/s over steps or tokens, with
checkpoints and restarts, several runs overlaid; the page asks for new
records every 2 s and the server sends each run's bytes after the offset
the page already has, so a long run's file is not sent again. --html writes
the same page once, data and all, for sharing without a server.

usage: tools/view_runs.py PATH [PATH ...] [--port N] [--host ADDR] [--smooth W]
       tools/view_runs.py PATH [PATH ...] --html OUT.html
  PATH: a run directory (out_dir/run_name) or a folder of them (out_dir),
  searched two levels down; runs that appear later are listed as they come.

A server, not a static page: a page opened from file:// may not read the
files next to it in Chromium, and a page rewritten on disk would lose the
reader's zoom at every refresh. Standard library only. The charts are
uPlot (npm uplot, MIT), fetched by tools/prepare_data.sh and put into the
page, so nothing is fetched from the network when the page is viewed.

Exit codes: 0 stopped with Ctrl-C or snapshot written, 1 the port cannot be
used, uPlot missing or the snapshot not writable, 2 bad arguments or bad
metrics (the file and line named)."""
import argparse
import errno
import http.server
import json
import os
import re
import socket
import sys
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
import plot_run  # noqa: E402  (record checks and the default window are plot_run.py's)

ROOT = os.path.dirname(TOOLS)
UPLOT_VERSION = "1.6.32"  # tools/prepare_data.sh fetches this one
UPLOT_DIR = os.path.join(ROOT, "data", "npm", "uplot", "dist")
DEFAULT_PORT = 6007  # one above TensorBoard's, so that both can run
POLL_S = 2
CHUNK = 8 << 20  # bytes of one run sent per answer; the page asks again at once for more
SEARCH_DEPTH = 2


def fail(code, message):
    print(f"view_runs.py: error: {message}", file=sys.stderr)
    sys.exit(code)


def find_runs(paths):
    """The run directories under paths (each also its id), in a stable order: a
    path holding metrics.jsonl is a run; otherwise its subdirectories are
    searched, SEARCH_DEPTH levels down, not below a run (its step_* folders)."""
    found = []

    def walk(d, depth):
        if os.path.isfile(os.path.join(d, "metrics.jsonl")):
            found.append(os.path.normpath(d))
            return
        if depth == SEARCH_DEPTH:
            return
        try:
            entries = [e.path for e in os.scandir(d) if e.is_dir() and not e.name.startswith(".")]
        except OSError:
            return  # removed or unreadable meanwhile: looked at again at the next poll
        for sub in sorted(entries):
            walk(sub, depth + 1)

    for p in paths:
        walk(p, 0)
    return list(dict.fromkeys(found))


def names_of(dirs):
    """Each run's name: its directory's, or its path where two share one."""
    base = [os.path.basename(d) or d for d in dirs]
    return [b if base.count(b) == 1 else d for b, d in zip(base, dirs)]


def reject_constant(name):
    raise ValueError(f"{name} is not JSON (the trainer writes null for it)")


def read_new(path, offset, line, file_id):
    """The complete lines of path after byte offset (line: the number of the
    first), checked as plot_run.py checks them. A cut last line (a record
    being written) is left for the next call; so is everything from a bad
    line on, which is named in "error". A file that was replaced or became
    shorter is read again from the start ("reset")."""
    out = {"records": [], "offset": offset, "line": line, "first_line": line, "reset": False,
           "more": False, "error": None, "file": file_id, "age_s": None}
    try:
        st = os.stat(path)
        out["age_s"] = max(0.0, time.time() - st.st_mtime)
        out["file"] = f"{st.st_dev}:{st.st_ino}"
        if (file_id is not None and file_id != out["file"]) or st.st_size < offset:
            out["reset"] = True
            offset = out["offset"] = 0
            line = out["line"] = out["first_line"] = 1
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(CHUNK)
    except OSError as e:
        out["error"] = f"cannot read {path}: {e.strerror}"
        return out
    end = data.rfind(b"\n") + 1
    if end == 0 and len(data) == CHUNK:
        out["error"] = f"{path}:{line}: a line longer than {CHUNK} bytes: not a metrics.jsonl record"
        return out
    out["more"] = len(data) == CHUNK
    for raw in data[:end].split(b"\n")[:-1]:
        where = f"{path}:{line}"
        try:
            text = raw.decode("utf-8")
            record = json.loads(text, parse_constant=reject_constant) if text.strip() else None
        except UnicodeDecodeError:
            out["error"] = f"{where}: not UTF-8 text; fix or delete that line"
            return out
        except json.JSONDecodeError as e:
            out["error"] = (f"{where}: not JSON ({e.msg}, column {e.colno}): {text.strip()[:60]!r}; "
                            "fix or delete that line")
            return out
        except ValueError as e:
            out["error"] = f"{where}: {e}; fix or delete that line"
            return out
        if record is not None:
            problem = plot_run.record_problem(record, where)
            if problem:
                out["error"] = problem
                return out
            out["records"].append(text)  # as written: valid JSON, numbers exact
        offset += len(raw) + 1
        line += 1
        out["offset"], out["line"] = offset, line
    return out


def answer(dirs, known):
    """The poll answer: every run found, with its records after what the page has."""
    runs = []
    for d, name in zip(dirs, names_of(dirs)):
        k = known.get(d) or {}
        offset, line, file_id = k.get("offset", 0), k.get("line", 1), k.get("file")
        if not (isinstance(offset, int) and isinstance(line, int) and offset >= 0 and line >= 1):
            offset, line, file_id = 0, 1, None
        new = read_new(os.path.join(d, "metrics.jsonl"), offset, line, file_id)
        records = new.pop("records")
        meta = json.dumps(dict(new, id=d, name=name, dir=d))
        runs.append(meta[:-1] + ',"records":[' + ",".join(records) + "]}")
    return '{"runs":[' + ",".join(runs) + "]}"


def check_all(dirs):
    """Every complete line of every run, before serving: a bad line stops the
    tool here, as it stops plot_run.py (while serving, the page shows it)."""
    total = 0
    for d in dirs:
        offset, line, file_id = 0, 1, None
        while True:
            new = read_new(os.path.join(d, "metrics.jsonl"), offset, line, file_id)
            if new["error"]:
                fail(2, new["error"])
            total += len(new["records"])
            offset, line, file_id = new["offset"], new["line"], new["file"]
            if not new["more"]:
                break
    return total


def page(config, snapshot=None, uplot_dir=UPLOT_DIR):
    """The page: the template with uPlot, view_runs.js, the settings and (for
    --html) the runs' records put in."""
    parts = {}
    for key, name in (("UPLOT_JS", "uPlot.iife.min.js"), ("UPLOT_CSS", "uPlot.min.css")):
        path = os.path.join(uplot_dir, name)
        try:
            with open(path, encoding="utf-8") as f:
                parts[key] = f.read()
        except OSError:
            fail(1, f"uPlot (the chart library) is not at {path}: run tools/prepare_data.sh (it "
                 f"fetches uplot@{UPLOT_VERSION} with npm pack, its only network step, as "
                 "tools/setup.sh does), or pass --uplot DIR (a folder holding uPlot.iife.min.js "
                 "and uPlot.min.css)")
    with open(os.path.join(TOOLS, "view_runs.js"), encoding="utf-8") as f:
        parts["VIEW_JS"] = f.read()
    with open(os.path.join(TOOLS, "view_runs.html"), encoding="utf-8") as f:
        template = f.read()

    def script_safe(text):  # nothing in an inline script may end it early
        return text.replace("</", "<\\/")

    parts["UPLOT_JS"] = script_safe(parts["UPLOT_JS"])
    parts["VIEW_JS"] = script_safe(parts["VIEW_JS"])
    parts["CONFIG"] = script_safe(json.dumps(config))
    parts["SNAPSHOT"] = ("" if snapshot is None else '<script type="application/json" '
                         f'id="snapshot">{script_safe(snapshot)}</script>')
    parts["TITLE"] = "gpt2_ddp runs: " + ", ".join(config["paths"]).replace("<", "&lt;")
    return re.sub(r"@@([A-Z_]+)@@", lambda m: parts[m.group(1)], template)


def snapshot_of(dirs):
    """Every run's records, as the server would send them from offset 0."""
    return answer(dirs, {})[:-1] + f',"written":{json.dumps(time.strftime("%Y-%m-%d %H:%M:%S"))}}}'


class Handler(http.server.BaseHTTPRequestHandler):
    """GET / (the page) and POST /api/poll ({"known": {run id: {offset,
    line, file}}} -> every run found, with the records after offset)."""
    server_version = "view_runs.py"

    def send(self, code, body, kind):
        data = body.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.split("?")[0] in ("/", "/index.html"):
            self.send(200, self.server.page, "text/html; charset=utf-8")
        else:
            self.send(404, "not found: this server has / and /api/poll\n", "text/plain")

    def do_POST(self):
        if self.path != "/api/poll":
            self.send(404, "not found: this server has / and /api/poll\n", "text/plain")
            return
        try:
            size = int(self.headers.get("Content-Length", "0"))
            known = json.loads(self.rfile.read(size) or b"{}").get("known", {})
            if not isinstance(known, dict):
                raise ValueError("known is not an object")
        except (ValueError, AttributeError) as e:
            self.send(400, f"bad poll request: {e}\n", "text/plain")
            return
        self.send(200, answer(find_runs(self.server.paths), known), "application/json")

    def log_message(self, format, *args):
        pass  # quiet, as tensorboard is: the page shows what is going on


def make_server(paths, host, port, config, uplot_dir=UPLOT_DIR):
    """The HTTP server (one request at a time: the page's polls are small)."""
    html = page(config, uplot_dir=uplot_dir)
    server_class = http.server.HTTPServer
    if ":" in host:  # an IPv6 address such as ::1
        server_class = type("HTTPServer6", (http.server.HTTPServer, ), {"address_family": socket.AF_INET6})
    try:
        server = server_class((host, port), Handler)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            fail(1, f"port {port} on {host} is in use (another view_runs.py, or TensorBoard?): "
                 "pass --port N, or --port 0 for any free port")
        fail(1, f"cannot serve on {host}:{port}: {e.strerror} (--host 127.0.0.1 serves this "
             "machine only)")
    server.paths = paths
    server.page = html
    return server


def port_number(text):
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535; 0: any free port)")
    return n


def parse_args():
    ap = argparse.ArgumentParser(
        prog="tools/view_runs.py",
        description="A live view of gpt2_ddp runs in the browser: serves a page that draws their "
        "metrics.jsonl and refreshes while they train (or, with --html, writes it once). "
        "Exit codes: 0 done, 1 port unusable, uPlot missing or output not writable, 2 bad "
        "arguments or metrics.")
    ap.add_argument("paths", nargs="+", metavar="PATH",
                    help="a run directory (holds metrics.jsonl) or a folder of them, e.g. checkpoints/")
    ap.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                    help=f"port to serve on (default {DEFAULT_PORT}; 0: any free port, printed)")
    ap.add_argument("--host", default="127.0.0.1",
                    help="address to serve on (default 127.0.0.1: this machine only; from "
                    "elsewhere, forward the port: ssh -L 6007:127.0.0.1:6007 HOST)")
    ap.add_argument("--smooth", type=plot_run.smoothing, default=plot_run.DEFAULT_WINDOW, metavar="W",
                    help="the page's first smoothing window, in steps, as plot_run.py's --smooth "
                    f"(default {plot_run.DEFAULT_WINDOW}; 0: off; the page can change it)")
    ap.add_argument("--html", metavar="OUT.html",
                    help="write one self-contained page (data and uPlot inside, no server, no "
                    "refresh) and exit")
    ap.add_argument("--uplot", metavar="DIR", default=UPLOT_DIR,
                    help="folder holding uPlot.iife.min.js and uPlot.min.css (default: "
                    "data/npm/uplot/dist, fetched by tools/prepare_data.sh)")
    return ap.parse_args()


def main():
    args = parse_args()
    for p in args.paths:
        if not os.path.isdir(p):
            fail(2, f"{p}: not a directory (give a run directory, out_dir/run_name, or a folder "
                 "of them such as checkpoints/)")
    dirs = find_runs(args.paths)
    config = {"paths": args.paths, "smooth": args.smooth, "poll_s": POLL_S}
    if args.html:
        if not dirs:
            fail(2, f"no run directories (holding metrics.jsonl) under {', '.join(args.paths)}")
        total = check_all(dirs)
        html = page(config, snapshot=snapshot_of(dirs), uplot_dir=args.uplot)
        try:
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(html)
        except OSError as e:
            fail(1, f"cannot write {args.html}: {e.strerror}")
        print(f"wrote {args.html}: {len(dirs)} runs, {total} records, {len(html) // 1024} KiB")
        return 0
    total = check_all(dirs)
    server = make_server(args.paths, args.host, args.port, config, uplot_dir=args.uplot)
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in host else host
    found = (f"{len(dirs)} runs ({total} records)" if dirs else
             "no runs yet (they are listed as their metrics.jsonl appears)")
    print(f"view_runs.py: {found} under {', '.join(args.paths)}; open http://{shown}:{port}/ "
          "(Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
