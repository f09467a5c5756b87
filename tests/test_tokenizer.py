"""tokenizer.py: normalisation steps and WordPiece by hand, vocab.txt, pairs, round trips."""
import hashlib
import random

import pytest

from tokenizer import (
    Tokenizer,
    basic_tokenize,
    clean_text,
    is_cjk,
    is_control,
    is_punctuation,
    is_whitespace,
    space_cjk,
    split_on_punctuation,
    strip_accents,
    wordpiece,
)

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# ids:        0        1        2        3        4
TINY = SPECIALS + ["un", "##aff", "##able", "the", "cat", "##s", "a", "##b", "##c", ",", "!",
                   "中", "cafe"]
# ids:           5      6         7         8      9      10     11   12     13    14   15
#                16    17


def tiny(lowercase=True):
    return Tokenizer(TINY, lowercase=lowercase)


# --- normalisation, one step at a time ---------------------------------------------------------

def test_character_classes_by_hand():
    # whitespace: space, tab, LF, CR, NBSP (Zs), ideographic space (Zs); not: U+2028 (Zl), "x"
    assert [is_whitespace(c) for c in " \t\n\r\u00a0\u3000\u2028x"] == [True] * 6 + [False, False]
    # controls: BEL (Cc), ZWSP/ZWJ/BOM (Cf), NEL (Cc); tab/LF/CR count as whitespace instead
    assert [is_control(c) for c in "\x07\u200b\u200d\ufeff\x85\t\n\ra"] == [True] * 5 + [False] * 4
    # punctuation: Unicode P* ("¿", "—", "«") plus ASCII symbols ("$", "^", "`", "+"); not
    # letters/"€" (Sc)
    assert [is_punctuation(c) for c in "¿—«$^`+a€5"] == [True] * 7 + [False] * 3
    # CJK ideographs including compatibility ones; Hiragana, Hangul are not
    assert [is_cjk(c) for c in "中\uf900\U00020000ひ한a"] == [True, True, True, False, False, False]


def test_clean_text_by_hand():
    # NUL, BEL, ZWSP and U+FFFD vanish; tab, CR, NBSP become plain spaces
    assert clean_text("a\x00b\x07c\u200bd\ufffde\tf\rg\u00a0h") == "abcde f g h"


def test_space_cjk_by_hand():
    assert space_cjk("ab中文cd") == "ab 中  文 cd"
    assert space_cjk("ひらがな") == "ひらがな"  # Hiragana is a spaced script: untouched


def test_strip_accents_by_hand():
    # é (U+00E9) -> NFD e + U+0301 (Mn) -> e; decomposed input gives the same; ß has no accent
    assert (strip_accents("Café cafe\u0301 naïve Ångström straße")
            == "Cafe cafe naive Angstrom straße")


def test_split_on_punctuation_by_hand():
    assert split_on_punctuation("don't!!") == ["don", "'", "t", "!", "!"]
    assert split_on_punctuation("e-mail") == ["e", "-", "mail"]
    assert split_on_punctuation("$5") == ["$", "5"]
    assert split_on_punctuation("...") == [".", ".", "."]


def test_basic_tokenize_by_hand():
    text = "Héllo,\tWORLD!! 中文 don't\u200b cafe\u0301"
    assert basic_tokenize(text) == [
        "hello", ",", "world", "!", "!", "中", "文", "don", "'", "t", "cafe"]
    assert basic_tokenize(text, lowercase=False) == [
        "Héllo", ",", "WORLD", "!", "!", "中", "文", "don", "'", "t", "cafe\u0301"]
    # Python's lower() on the whole word makes a word-final sigma "ς", as in the official BERT code
    assert basic_tokenize("ΟΔΟΣ ΣΑΣ.") == ["οδος", "σας", "."]


# --- WordPiece on a tiny vocab -----------------------------------------------------------------

def test_wordpiece_by_hand():
    vocab = set(TINY)
    # longest prefix "un", then the longest "##" pieces: "##aff", then "##able"
    assert wordpiece("unaffable", vocab) == ["un", "##aff", "##able"]
    # "abc": "abc" and "ab" are not in the vocab, "a" is; then "##bc" is not, "##b" is; then "##c"
    assert wordpiece("abc", vocab) == ["a", "##b", "##c"]
    assert wordpiece("cats", vocab) == ["cat", "##s"]
    # one position without a match makes the whole word [UNK]: "cat" then "##x" is missing
    assert wordpiece("catx", vocab) == ["[UNK]"]
    # over 200 characters (the official limit; HuggingFace's is 100): [UNK] even though
    # "a" + "##b"*200 would match; 150 characters are still split into pieces
    assert wordpiece("a" + "b" * 149, vocab) == ["a"] + ["##b"] * 149
    assert wordpiece("a" + "b" * 199, vocab) == ["a"] + ["##b"] * 199
    assert wordpiece("a" + "b" * 200, vocab) == ["[UNK]"]


def test_tokenizer_tokenize_and_encode_by_hand():
    tok = tiny()
    assert tok.tokenize("The CATS, unaffable!") == [
        "the", "cat", "##s", ",", "un", "##aff", "##able", "!"]
    assert tok.encode("The CATS, unaffable!") == [8, 9, 10, 14, 5, 6, 7, 15]
    assert tok.tokenize("Café 中国") == ["cafe", "中", "[UNK]"]
    # special tokens written in the text stay whole (case-sensitive), also glued to words
    assert tok.tokenize("the[SEP]cat [MASK] [sep]") == [
        "the", "[SEP]", "cat", "[MASK]", "[UNK]", "[UNK]", "[UNK]"]
    assert tok.encode("[CLS][PAD][UNK]") == [2, 0, 1]
    # cased: no lowercasing, accents kept
    assert tiny(lowercase=False).tokenize("The cat Café") == ["[UNK]", "cat", "[UNK]"]


def test_fast_path_equals_reference_basic_tokenize():
    """Tokenizer.words (per-character table) must equal basic_tokenize on every kind of
    character."""
    rng = random.Random(0)
    alphabet = ("aZé\u0301ΣΟς中ひ한 \t\n\x00\u200b\ufffd!.,-'$😀\ufe0f\u0345\U0001d165\U0001d16d"
                "\u093f\u0915İ")
    tok = tiny()
    for lowercase in (True, False):
        tok = tiny(lowercase)
        for _ in range(2000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            assert tok.words(text) == basic_tokenize(text, lowercase), repr(text)


# --- vocab.txt -------------------------------------------------------------------------------

def test_special_ids_come_from_the_file(tmp_path):
    # BERT's layout: [PAD]=0, [unused0..98], [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103
    lines = (["[PAD]"] + [f"[unused{i}]" for i in range(99)]
             + ["[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"])
    (tmp_path / "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tok = Tokenizer.load(tmp_path / "vocab.txt")
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 100, 101, 102, 103)
    assert len(tok) == 105 and tok.vocab["hello"] == 104
    assert tok.encode_pair("hello")[0] == [101, 104, 102]


def test_save_load_round_trip_and_hash(tmp_path):
    tok = tiny()
    tok.save(tmp_path / "vocab.txt")
    data = (tmp_path / "vocab.txt").read_bytes()
    assert data == ("\n".join(TINY) + "\n").encode("utf-8")
    assert tok.hash() == hashlib.sha256(data).hexdigest()
    again = Tokenizer.load(tmp_path / "vocab.txt")
    assert again.id_to_token == TINY and again.hash() == tok.hash()
    assert tiny().hash() != Tokenizer(TINY + ["extra"]).hash()
    # CRLF vocab files (edited on Windows) load the same tokens
    (tmp_path / "crlf.txt").write_bytes(data.replace(b"\n", b"\r\n"))
    assert Tokenizer.load(tmp_path / "crlf.txt").id_to_token == TINY


def test_load_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        Tokenizer.load(tmp_path / "missing.txt")
    (tmp_path / "v.txt").write_text("[PAD]\n[UNK]\nhello\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[CLS\], \[SEP\], \[MASK\]"):
        Tokenizer.load(tmp_path / "v.txt")


# --- pairs, decode, round trips --------------------------------------------------------------

def test_encode_pair_by_hand():
    tok = tiny()
    ids, seg = tok.encode_pair("the cat", "cats", max_len=16)
    assert ids == [2, 8, 9, 3, 9, 10, 3]  # [CLS] the cat [SEP] cat ##s [SEP]
    assert seg == [0, 0, 0, 0, 1, 1, 1]
    ids, seg = tok.encode_pair("the cat", max_len=16)
    assert (ids, seg) == ([2, 8, 9, 3], [0, 0, 0, 0])
    # BERT's _truncate_seq_pair with max_len=7: room 7 - 3 = 4; A has 4 (the cat , !),
    # B has 3 (cat ##s !)
    # 4 + 3 = 7 > 4, A longer: drop A's "!" -> 3 + 3 = 6, a tie drops from B: B's "!" -> 3 + 2 = 5,
    # A longer: drop A's "," -> 2 + 2 = 4 fits: [CLS] the cat [SEP] cat ##s [SEP]
    ids, seg = tok.encode_pair("the cat , !", "cats !", max_len=7)
    assert ids == [2, 8, 9, 3, 9, 10, 3] and seg == [0, 0, 0, 0, 1, 1, 1]
    ids, _ = tok.encode_pair("the cat , !", max_len=4)  # single: keep max_len - 2 tokens of A
    assert ids == [2, 8, 9, 3]
    with pytest.raises(ValueError, match="max_len"):
        tok.encode_pair("a", "b", max_len=2)


def test_decode_joins_continuations():
    tok = tiny()
    assert tok.decode([8, 9, 10, 14, 5, 6, 7]) == "the cats , unaffable"
    assert tok.decode([2, 8, 3, 0]) == "[CLS] the [SEP] [PAD]"
    assert tok.decode([2, 8, 3, 0], skip_special=True) == "the"


def test_decode_encode_round_trip_is_the_normalised_text():
    tok = tiny()
    for text in ["The CATS, unaffable!", "Café,中!!  the\tcat\u200bs", "ABC, the UnAffable CATS!"]:
        assert tok.decode(tok.encode(text)) == " ".join(basic_tokenize(text))


def test_tokenizer_pickles_for_worker_processes():
    import pickle

    tok = tiny()
    tok.encode("the cats")  # fills the word cache, which is not pickled
    again = pickle.loads(pickle.dumps(tok))
    assert again.encode("The cats, unaffable!") == tok.encode("The cats, unaffable!")
    assert len(pickle.dumps(tok)) < 1000


def test_docstring_examples():
    """The worked examples in tokenizer.py's docstrings are run, so they cannot go stale."""
    import doctest

    import tokenizer

    result = doctest.testmod(tokenizer)
    assert result.attempted > 20 and result.failed == 0


def test_decode_rejects_ids_outside_the_vocab():
    tok = Tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"])
    assert tok.decode([5, 6]) == "the cat"
    with pytest.raises(ValueError,
                       match=r"token id 99999 is not in the vocabulary \(ids run from 0 to 6\)"):
        tok.decode([5, 99999])
    with pytest.raises(ValueError, match="token id -1 is not in the vocabulary"):
        tok.decode([-1])  # not the last entry, as Python's negative indexing would give


def test_tokenizer_runs_on_the_standard_library_and_tqdm_alone():
    """tokenizer.py's docstring promises "stdlib, and tqdm": importing it must not load torch."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, tokenizer; "
            "print(sorted(m for m in ('torch', 'numpy', 'plumbing') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
