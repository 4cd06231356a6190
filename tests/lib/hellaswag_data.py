"""Small HellaSwag files in the official format (hellaswag_val.jsonl: one
JSON object per line with ind, activity_label, ctx_a, ctx_b, ctx, endings,
source_id, split, split_type, label), made from the bundled nlp-corpus
sentences: the context is the start of a sentence, the right ending its
rest, the wrong ones the rests of other sentences. The official file cannot
be fetched here (no network), and the scoring does not care where the text
comes from. Also: the malformed lines the loader must refuse."""
import glob
import json
import os
import random


def corpus_sentences(root):
    sentences = []
    for path in sorted(glob.glob(os.path.join(root, "data", "nlp-corpus", "text", "*.txt"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                words = line.split()
                if 10 <= len(words) <= 40:
                    sentences.append(words)
    if len(sentences) < 50:
        raise SystemExit("too few nlp-corpus sentences: run tools/prepare_data.sh first")
    return sentences


def example(ind, ctx_words, right, wrong, rng):
    """One official-format record; ctx = ctx_a + " " + ctx_b as in the real file."""
    split_at = max(1, len(ctx_words) * 2 // 3)
    ctx_a, ctx_b = " ".join(ctx_words[:split_at]), " ".join(ctx_words[split_at:])
    label = rng.randrange(4)
    endings = list(wrong[:3])
    endings.insert(label, right)
    return {"ind": ind, "activity_label": "Reading text", "ctx_a": ctx_a, "ctx_b": ctx_b,
            "ctx": (ctx_a + " " + ctx_b).strip(), "split": "val", "split_type": "indomain",
            "label": label, "endings": endings, "source_id": f"nlp-corpus~{ind}"}


def make_examples(root, n, seed=14, long_context_words=0):
    """n examples; with long_context_words > 0 the last one has a context of
    that many words (longer than a small model's seq_len: the cut rule)."""
    rng = random.Random(seed)
    sentences = corpus_sentences(root)
    rng.shuffle(sentences)
    out = []
    for i in range(n):
        words = sentences[i]
        cut = max(4, len(words) // 2)
        others = [" ".join(sentences[(i + 7 * k + 101) % len(sentences)][cut:]) for k in (1, 2, 3)]
        out.append(example(i, words[:cut], " ".join(words[cut:]), others, rng))
    # Text outside ASCII goes through the byte-level BPE like the rest.
    out[1]["ctx"] += " \u2014 caf\u00e9 na\u00efve \u201cquoted\u201d"
    if long_context_words:
        ctx = []
        for words in sentences[n:]:
            ctx += words
            if len(ctx) >= long_context_words:
                break
        out[-1]["ctx"] = " ".join(ctx[:long_context_words])
    return out


def write_jsonl(path, examples):
    with open(path, "w", encoding="utf-8") as f:
        for e in examples:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")


# name -> (line text that replaces line 3 of a good file, message part the error must show)
MALFORMED = {
    "not_json": ('{"ctx": "a", "endings": ["a", "b", "c", "d"], "label": 1', "not valid JSON"),
    "trailing_text": ('{"ctx": "a", "endings": ["a", "b", "c", "d"], "label": 1} x',
                      "unexpected text after the JSON object"),
    "not_object": ('[1, 2, 3]', "expected a JSON object"),
    "no_ctx": ('{"endings": ["a", "b", "c", "d"], "label": 1}', '"ctx" missing or not a string'),
    "empty_ctx": ('{"ctx": "", "endings": ["a", "b", "c", "d"], "label": 1}', '"ctx" is empty'),
    "three_endings": ('{"ctx": "a", "endings": ["a", "b", "c"], "label": 1}',
                      '"endings" missing or not an array of 4 strings'),
    "ending_not_string": ('{"ctx": "a", "endings": ["a", 2, "c", "d"], "label": 1}',
                          '"endings"\\[1\\] is not a string'),
    "label_string": ('{"ctx": "a", "endings": ["a", "b", "c", "d"], "label": "1"}',
                     '"label" missing or not an integer'),
    "label_range": ('{"ctx": "a", "endings": ["a", "b", "c", "d"], "label": 4}',
                    '"label" = 4: must be 0, 1, 2 or 3'),
    # a valid object, then a NUL and junk that JSON reading would stop at unseen
    "nul_byte": ('{"ctx": "a", "endings": ["a", "b", "c", "d"], "label": 1}\0x',
                 "a NUL byte in the line"),
}
