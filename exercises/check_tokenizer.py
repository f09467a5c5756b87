"""Part 3's checks: the tokenizer (exercises 14-15). Each check_* takes the student's module and
raises AssertionError with the first failing case; answer_key() stores the project's outputs on
random inputs in exercises/reference/tokenizer.pt (python exercises/answer_key.py)."""
import random
import types

from exercises.harness import Exercise, member, reference

PART = "tokenizer"

# The random texts of check_basic_tokenize draw from these characters, so that every rule of
# stage 1 meets its case: letters, accented letters (composed, and combining accents as
# characters of their own), digits, BERT's punctuation (ASCII symbols and Unicode P*), symbols
# that are not punctuation, CJK ideographs and kana, whitespace (tab, newline, no-break and
# ideographic space), control characters and U+FFFD. No capital sigma: its lowercase depends on
# the letters around it.
ALPHABET = ("abcXYZ" "éÉñüÅİ" "\u0301\u0308" "07" ".,!?'-$^`+¿«»—、" "€©" "中文字" "ひが"
            "     \t\n\u00a0\u3000" "\x07\u200b\ufffd")


def answer_key() -> dict:
    """Random texts and the project's tokenizer.basic_tokenize on them (uncased and cased); random
    words over a random vocabulary of pieces and the project's tokenizer.wordpiece on them: what
    the checks compare with."""
    from tokenizer import basic_tokenize, wordpiece  # the answer key: the project's own functions

    rng = random.Random(1)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 24))) for _ in range(300)]
    basic = {"texts": texts, "uncased": [basic_tokenize(t) for t in texts],
             "cased": [basic_tokenize(t, lowercase=False) for t in texts]}

    rng = random.Random(0)
    letters = "abcde"

    def rand_word(lo, hi):
        return "".join(rng.choice(letters) for _ in range(rng.randint(lo, hi)))

    vocab = sorted({rand_word(1, 3) for _ in range(30)} | {"##" + rand_word(1, 3)
                                                          for _ in range(40)})
    words = [rand_word(1, 8) for _ in range(300)]
    return {"basic_tokenize": basic,
            "wordpiece": {"vocab": vocab, "words": words,
                          "pieces": [wordpiece(w, set(vocab)) for w in words]}}


def check_basic_tokenize(student) -> None:
    basic_tokenize = member(student, "basic_tokenize")

    def expect(text, want, lowercase=True, why=""):
        got = basic_tokenize(text, lowercase=lowercase)
        assert got == want, (f"basic_tokenize({text!r}, lowercase={lowercase}) should be {want}, "
                             f"got {got}" + (f" ({why})" if why else ""))

    # The docstring's examples: lowercase and strip accents per word, split punctuation, space CJK.
    expect("Héllo, WORLD!! 中文", ["hello", ",", "world", "!", "!", "中", "文"],
           why="lowercase, strip accents, punctuation alone, one word per CJK ideograph")
    expect("Héllo, WORLD!! 中文", ["Héllo", ",", "WORLD", "!", "!", "中", "文"], lowercase=False,
           why="lowercase=False (a cased vocab) keeps the case and the accents")
    expect("ÉCOLE naïve", ["ÉCOLE", "naïve"], lowercase=False,
           why="lowercase=False keeps the accents")
    # Accents: NFD splits "é" into "e" + U+0301 (category Mn), which is dropped; an accent typed as
    # its own combining character goes the same way.
    expect("Café naïve ÅNGSTRÖM", ["cafe", "naive", "angstrom"], why="strip the accents")
    expect("Cafe\u0301", ["cafe"], why="'e' + combining acute U+0301: drop the Mn mark")
    expect("ひらがな", ["ひらかな"],
           why="NFD splits 'が' into 'か' + the voicing mark U+3099 (Mn), which BERT drops too")
    expect("a \u0301 b", ["a", "b"],
           why="a word that was only an accent is empty after stripping and disappears")
    expect("a \u0301 b", ["a", "\u0301", "b"], lowercase=False,
           why="lowercase=False strips nothing")
    # Punctuation: every ASCII non-alphanumeric character, and Unicode category P*.
    expect("$5^2`x+y", ["$", "5", "^", "2", "`", "x", "+", "y"],
           why="BERT counts ASCII 33-47, 58-64, 91-96, 123-126 as punctuation: '$', '^', '`', "
               "'+' too, although Unicode calls them symbols")
    expect("¿Qué? a—b «x»、y", ["¿", "que", "?", "a", "—", "b", "«", "x", "»", "、", "y"],
           why="Unicode punctuation (category P*) splits too")
    expect("5€ ©2020", ["5€", "©2020"],
           why="'€' and '©' are symbols (Sc, So) outside ASCII: not punctuation, not split")
    expect("don't!!", ["don", "'", "t", "!", "!"], why="every punctuation character alone")
    # Cleaning: controls vanish (no space left in their place), whitespace of every kind splits.
    expect("a\x07b zero\u200bwidth x\ufffdy", ["ab", "zerowidth", "xy"],
           why="drop control characters (Cc, Cf, ...) and U+FFFD")
    expect("a\tb\nc\r\nd\u00a0e\u3000f", ["a", "b", "c", "d", "e", "f"],
           why="tab, newline and CR are whitespace, not controls; so are U+00A0 and U+3000 (Zs)")
    # CJK ideographs are words of their own; kana are not CJK ideographs.
    expect("中文ab字", ["中", "文", "ab", "字"], why="each CJK ideograph is a word of its own")
    expect("ひが中", ["ひか", "中"], why="kana are not CJK ideographs: they stay together")
    expect("", [], why="the empty text has no words")
    expect(" \t\n\x07 ", [], why="only whitespace and controls: no words")
    # The answer key: 300 random texts over ALPHABET, uncased and cased.
    key = reference(PART)["basic_tokenize"]
    for text, uncased, cased in zip(key["texts"], key["uncased"], key["cased"]):
        expect(text, uncased, why="tokenizer.basic_tokenize's answer")
        expect(text, cased, lowercase=False, why="tokenizer.basic_tokenize's answer")


def check_wordpiece(student) -> None:
    wordpiece = member(student, "wordpiece")
    v = {"un", "##aff", "##able", "a", "##b"}
    for word, want in (("unaffable", ["un", "##aff", "##able"]), ("ab", ["a", "##b"]),
                       ("abc", ["[UNK]"])):
        got = wordpiece(word, v)
        assert got == want, f"vocab {sorted(v)}: {word!r} -> {want}, got {got}"
    # Longest first: "abc" is one piece although "a" + "##bc" would also cover it.
    v = {"a", "ab", "abc", "##c", "##bc"}
    got = wordpiece("abc", v)
    assert got == ["abc"], \
        f"take the longest matching piece: vocab {sorted(v)}: 'abc' -> ['abc'], got {got}"
    got = wordpiece("abcc", v)
    assert got == ["abc", "##c"], f"vocab {sorted(v)}: 'abcc' -> ['abc', '##c'], got {got}"
    # Greedy, no backtracking: "ab" is taken, "##cd" and "##d" do not exist -> [UNK], although
    # "a" + "##bcd" would work (BERT does the same).
    v = {"a", "ab", "##bcd", "##c"}
    got = wordpiece("abcd", v)
    assert got == ["[UNK]"], \
        f"greedy, no backtracking: vocab {sorted(v)}: 'abcd' -> ['[UNK]'], got {got}"
    # "##" marks continuations only.
    got = wordpiece("bb", {"b", "##b"})
    assert got == ["b", "##b"], f"vocab ['##b', 'b']: 'bb' -> ['b', '##b'], got {got}"
    got = wordpiece("b", {"##b"})
    assert got == ["[UNK]"], \
        f"a word cannot start with a '##' piece: vocab ['##b']: 'b' -> ['[UNK]'], got {got}"
    got = wordpiece("bb", {"b"})
    assert got == ["[UNK]"], \
        f"a continuation needs its '##' piece: vocab ['b']: 'bb' -> ['[UNK]'], got {got}"
    # At most 200 characters (the official tokenization.py's limit).
    v = {"x", "##x"}
    got = wordpiece("x" * 200, v)
    assert got == ["x"] + ["##x"] * 199, \
        f"a word of exactly 200 characters is split normally (['x', '##x', ...]), got {got[:3]}"
    got = wordpiece("x" * 201, v)
    assert got == ["[UNK]"], f"a word of 201 characters is ['[UNK]'], got {got[:3]}..."
    # The constants come from config (BERT's are the defaults): another [UNK], prefix and limit.
    config = types.SimpleNamespace(unk="<unk>", prefix="@@", max_input_chars_per_word=5)
    v = {"ab", "@@c", "@@de", "##c"}
    for word, want in (("abcde", ["ab", "@@c", "@@de"]), ("abcdec", ["<unk>"]),
                       ("abx", ["<unk>"])):
        got = wordpiece(word, v, config)
        assert got == want, (f"use config.unk, config.prefix, config.max_input_chars_per_word: "
                             f"with '<unk>', '@@', 5 and vocab {sorted(v)}: {word!r} -> {want}, "
                             f"got {got}")
    # The answer key on 300 random words over a random vocab of pieces.
    key = reference(PART)["wordpiece"]
    vocab = set(key["vocab"])
    for word, want in zip(key["words"], key["pieces"]):
        got = wordpiece(word, vocab)
        assert got == want, f"vocab {sorted(vocab)}: {word!r} -> {want}, got {got}"


EXERCISES = [
    Exercise(14, "basic_tokenize", PART, 5, check_basic_tokenize),
    Exercise(15, "wordpiece", PART, 5, check_wordpiece),
]
