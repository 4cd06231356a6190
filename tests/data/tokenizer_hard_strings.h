/* Hard inputs for the GPT-2 tokenizer tests (tokenizer_parity against the npm
 * oracle, tokenizer_roundtrip): the places where a BPE port usually slips.
 * Adjacent literals split the hex escapes ("\xE2" "\x82" "x") so that a
 * following hex digit is never swallowed. */
#ifndef GPT2_TESTS_TOKENIZER_HARD_STRINGS_H
#define GPT2_TESTS_TOKENIZER_HARD_STRINGS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *name; /* file-name friendly */
    const char *text;
    size_t len;
    bool valid_utf8;
} tokenizer_case;

/* The table is laid out by hand: which escapes share a literal, and where a
 * line breaks among the scripts and emoji, is part of reading it. */
/* clang-format off */
#define TOKENIZER_CASE(name, text, valid) {name, text, sizeof(text) - 1, valid}

static const tokenizer_case tokenizer_hard_cases[] = {
    TOKENIZER_CASE("contractions",
                   "I'm sure you're right: he's here, she'll stay, we've won, they'd go, "
                   "it's done, can't, don't, won't, y'all, o'clock.", true),
    /* GPT-2's pattern lists lower-case 's 't ... only: 'S is punctuation + letter. */
    TOKENIZER_CASE("contractions_upper",
                   "IT'S HE'LL WE'VE I'M THEY'D DON'T 'S 'T 'RE 'VE 'M 'LL 'D It'S We'Ve", true),
    TOKENIZER_CASE("contractions_edge",
                   "'s's'''s 'sup 'll've ''d 'ss l'l rock'n'roll 's 'tis 're-do "
                   "it\xE2\x80\x99s (curly) ' s 's\n's", true),
    TOKENIZER_CASE("chinese", "我爱自然语言处理。今天天气很好！GPT-2模型在2019年发布。", true),
    TOKENIZER_CASE("arabic", "مرحبا بالعالم! الرقم ١٢٣ و٤٥٦، والسنة 2024.", true),
    TOKENIZER_CASE("devanagari", "नमस्ते दुनिया। संख्या १२३४५ और ०९, वर्ष २०२४।", true),
    TOKENIZER_CASE("cyrillic", "Привет, мир! Ёжик съел 2024 яблока; ЩУКА и щука.", true),
    TOKENIZER_CASE("greek_japanese_korean",
                   "Καλημέρα κόσμε· こんにちは、世界！カタカナ 한국어 텍스트 ㄱㄴ", true),
    TOKENIZER_CASE("numbers",
                   "3.14159 1,000,000 0x1F 1e-10 2023-01-01 12:30:45 ４５６ Ⅻ ½ ²³ x² "
                   "①②③ 𝟘𝟙𝟚 ٣.١٤", true),
    TOKENIZER_CASE("emoji",
                   "👍 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇩🇪🇫🇷 a😀b 🤷🏻‍♀️ 👩🏿‍💻 #️⃣ 😀😀😀", true),
    TOKENIZER_CASE("spaces", "a  b   c    d     e\t\tf \t g\t \th  \t\t  i", true),
    TOKENIZER_CASE("newlines",
                   "line1\n\nline2\n\n\n   indented\n \n\tx\n\n\n\n\nend", true),
    TOKENIZER_CASE("crlf", "one\r\ntwo\r\n\r\nthree\r\n  four\r\r\n", true),
    TOKENIZER_CASE("trailing_spaces", "trailing spaces   ", true),
    TOKENIZER_CASE("trailing_newlines", "trailing newlines\n\n\n", true),
    TOKENIZER_CASE("only_whitespace", "   \n\t \r\n  ", true),
    TOKENIZER_CASE("leading_whitespace", "  \n\n  Leading whitespace and a word", true),
    /* Unicode spaces: V8's \s has U+FEFF but not U+0085 or U+180E. */
    TOKENIZER_CASE("unicode_spaces",
                   "a\xC2\xA0" "b\xE3\x80\x80" "c\xE2\x80\xA8" "d\xE2\x80\xA9" "e\xC2\x85"
                   "f\xEF\xBB\xBF" "g\xE1\xA0\x8E" "h\xE2\x80\x89" "i\xE2\x80\xAF" "j"
                   "\x0B" "k\x0C" "l \xC2\xA0 m\xC2\xA0\xC2\xA0n \xE3\x80\x80x\xEF\xBB\xBF"
                   /* after a space and before a letter the class decides the pieces */
                   " \xC2\x85" "a \xEF\xBB\xBF" "b \xE1\xA0\x8E" "c \xC2\xA0" "d  \xC2\x85\xC2\x85"
                   "e\xEF\xBB\xBF\xEF\xBB\xBF" "f \xE2\x80\xA8\n" "g", true),
    TOKENIZER_CASE("controls", "a\x01" "b\x7F" "c\x1B[0m d\x08" "e", true),
    TOKENIZER_CASE("nul_byte", "before\0after \0\0 end", true),
    TOKENIZER_CASE("punctuation",
                   "...!!!??? --- ,,,, \"\",\"\" '''' ((())) $$$ 100% #hashtag @user "
                   "http://x.y/z?a=1&b=2 <a href=\"#\">x</a> {\"k\": [1, 2]} ;-) :-( ~~~", true),
    /* Around commas Encoder.js looks merges up by the string "first,second". */
    TOKENIZER_CASE("comma_merges",
                   "\",\"\",\",\",\" \"],[\" \"},{\" ,,,,,,,, ,,,,,,,,,,,,,,,, ',',',' \"),\" "
                   "\",\",\",\",\",\",\",\" }},{{ ]],[[ ),(),( ',\",',\"", true),
    TOKENIZER_CASE("special_token_text",
                   "a<|endoftext|>b <|endoftext|> <|endoftext|>\n", true),
    TOKENIZER_CASE("code",
                   "def f(x):\n    return x**2  # square\n\n\tif (a && b) { c->d[i] = 0; }\n",
                   true),
    TOKENIZER_CASE("mixed_scripts", "abc123def ＡＢＣ Ǆǅǆ ßẞ ǰ̌ e\xCC\x81 n\xCC\x83o", true),
    TOKENIZER_CASE("empty", "", true),
    /* Ill-formed UTF-8: every maximal subpart is one U+FFFD (WHATWG). */
    TOKENIZER_CASE("invalid_utf8",
                   "ok \xFF\xFE bad \xC0\xAF overlong \xE0\x80\xAF overlong3 \xED\xA0\x80 "
                   "surrogate \xF4\x90\x80\x80 too big \xF8\x88\x80\x80\x80 five \xE2\x82"
                   "x trunc \xF0\x9F\x98 trunc-emoji\xF0\x9F\x98" "a \x80\x80 lone \xC3 "
                   "lead\xC3\xC3\xA9 \xE1\x80\xE2\x82\xAC\xF1\x80\x80 mixed", false),
    TOKENIZER_CASE("invalid_utf8_end", "truncated at the end \xE2\x82", false),
    TOKENIZER_CASE("invalid_utf8_words", "na\xEFve caf\xE9 \xFFword\xFE word\xC3", false),
};
/* clang-format on */

#define TOKENIZER_N_HARD_CASES (sizeof tokenizer_hard_cases / sizeof tokenizer_hard_cases[0])

#endif
