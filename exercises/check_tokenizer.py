"""Part 3's checks: the tokenizer (exercises 14-15). Each check_* takes the student's module and
raises AssertionError with the first failing case; answer_key() stores the project's outputs on
random inputs in exercises/reference/tokenizer.pt (python exercises/answer_key.py)."""
import random

from exercises.harness import Exercise, member, reference

PART = "tokenizer"


def answer_key() -> dict:
    """Random words over a random vocabulary of pieces, and the project's tokenizer.wordpiece on
    them: what check_wordpiece compares with."""
    from tokenizer import wordpiece  # the answer key: the project's own function

    rng = random.Random(0)
    letters = "abcde"

    def rand_word(lo, hi):
        return "".join(rng.choice(letters) for _ in range(rng.randint(lo, hi)))

    vocab = sorted({rand_word(1, 3) for _ in range(30)} | {"##" + rand_word(1, 3)
                                                          for _ in range(40)})
    words = [rand_word(1, 8) for _ in range(300)]
    return {"wordpiece": {"vocab": vocab, "words": words,
                          "pieces": [wordpiece(w, set(vocab)) for w in words]}}


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
    assert got == ["x"] + ["##x"] * 199, "a word of exactly 200 characters is split normally"
    got = wordpiece("x" * 201, v)
    assert got == ["[UNK]"], f"a word of 201 characters is ['[UNK]'], got {got[:3]}..."
    # The answer key on 300 random words over a random vocab of pieces.
    key = reference(PART)["wordpiece"]
    vocab = set(key["vocab"])
    for word, want in zip(key["words"], key["pieces"]):
        got = wordpiece(word, vocab)
        assert got == want, f"vocab {sorted(vocab)}: {word!r} -> {want}, got {got}"


EXERCISES = [
    Exercise(15, "wordpiece", PART, 5, check_wordpiece),
]
