"""tokenizer.py trainer: WordPiece's likelihood merges by hand, and incremental == full recount."""
import random
from collections import Counter

import pytest

from tokenizer import count_words, learn_vocab, pair_score, train

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_first_merges_by_hand():
    """The HF course's table (ch. 6.6): hug 10, pug 5, pun 12, bun 4, hugs 5.

    Units: h 15, p 17, b 4, ##u 36, ##g 20, ##n 16, ##s 5.
    1. (##g,##s) 5/(20*5) = 1/20 beats every other pair, all at 1/36 (e.g. (h,##u) 15/(15*36)) -> ##gs
    2. all remaining pairs score 1/36; the most frequent wins: (p,##u) 17 -> pu
       (##u is now 36 - 17 = 19)
    3. (h,##u) 15/(15*19) = (b,##u) 4/(4*19) = (##u,##gs) 5/(19*5) = 1/19; count 15 wins -> hu
       (##u is now 4, only in bun)
    4. (b,##u) 4/(4*4) = 0.25 -> bu
    5. (hu,##gs) 5/(15*5) = 0.0667 > (bu,##n) 4/(4*16) = 0.0625 > (hu,##g) 10/(15*15) -> hugs
    6. (hu,##g) 10/(10*15) = 0.0667 > (bu,##n) 0.0625 -> hug
    7. (bu,##n) 4/(4*16) = 0.0625 > (pu,##g) 5/(17*15), (pu,##n) 12/(17*16) -> bun
    8. (pu,##n) 12/(17*12) = (pu,##g) 5/(17*5) = 1/17; count 12 wins -> pun, then 9. pug
    """
    counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    vocab = learn_vocab(counts, vocab_size=5 + 7 + 4 + 9)
    assert vocab[:5] == SPECIALS
    assert vocab[5:12] == ["b", "g", "h", "n", "p", "s", "u"]  # the alphabet, as word starts
    assert vocab[12:16] == ["##g", "##n", "##s", "##u"]  # the characters seen inside words
    assert vocab[16:] == ["##gs", "pu", "hu", "bu", "hugs", "hug", "bun", "pun", "pug"]
    assert pair_score(5, 20, 5) == 1 / 20 and pair_score(15, 15, 36) == pytest.approx(1 / 36)


def test_min_frequency_and_alphabet_limit():
    # ab seen once: with min_frequency=2 no pair qualifies, the vocab stops at the alphabet
    assert learn_vocab({"ab": 1}, vocab_size=100, min_frequency=2) == SPECIALS + ["a", "b", "##b"]
    assert learn_vocab({"ab": 1}, vocab_size=100, min_frequency=1) == SPECIALS + ["a", "b", "##b", "ab"]
    # limit_alphabet=2 keeps the two most frequent characters (a: 5 + 2 + 1 = 8, b: 5; z: 1), "az" is left out
    assert learn_vocab({"ab": 5, "a": 2, "az": 1}, vocab_size=100, limit_alphabet=2) == SPECIALS + [
        "a", "b", "##b", "ab"]
    with pytest.raises(ValueError, match="vocab_size"):
        learn_vocab({"abc": 3}, vocab_size=7)


def naive_learn_vocab(word_counts, vocab_size, min_frequency=2):
    """The same algorithm with a full recount of every pair and unit before each merge."""
    words = {w: [w[0]] + ["##" + c for c in w[1:]] for w in word_counts}
    alphabet = sorted({c for w in word_counts for c in w})
    vocab = SPECIALS + alphabet + sorted({u for units in words.values() for u in units[1:]})
    while len(vocab) < vocab_size:
        units, pairs = Counter(), Counter()
        for w, n in word_counts.items():
            for u in words[w]:
                units[u] += n
            for p in zip(words[w], words[w][1:]):
                pairs[p] += n
        candidates = [(-pair_score(c, units[p[0]], units[p[1]]), -c, p) for p, c in pairs.items() if c >= min_frequency]
        if not candidates:
            break
        a, b = min(candidates)[2]
        merged = a + b[2:]
        if merged not in vocab:
            vocab.append(merged)
        for w, old in words.items():
            new, i = [], 0
            while i < len(old):
                if i + 1 < len(old) and (old[i], old[i + 1]) == (a, b):
                    new.append(merged)
                    i += 2
                else:
                    new.append(old[i])
                    i += 1
            words[w] = new
    return vocab


def test_incremental_counts_equal_full_recount():
    rng = random.Random(0)
    for trial in range(6):
        letters = "abcde"[: 3 + trial % 3]
        counts = {}
        for _ in range(60):
            word = "".join(rng.choice(letters) for _ in range(rng.randint(1, 7)))
            counts[word] = counts.get(word, 0) + rng.randint(1, 20)
        for size in (25, 60, 200):
            assert learn_vocab(counts, size) == naive_learn_vocab(counts, size), (trial, size)


def test_train_end_to_end():
    texts = ["The cat sat on the mat.", "The cats sat; the hats sat!", "Über café [SEP] naïve"] * 4
    tok = train(texts, vocab_size=60, progress=False)
    assert tok.id_to_token[:5] == SPECIALS
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert len(tok) <= 60
    for text in texts:  # every training word can be spelled from the alphabet: no [UNK]
        assert tok.unk_id not in tok.encode(text.replace("[SEP]", ""))
    assert "[SEP]" not in count_words(texts)  # special tokens are not training words
    assert count_words(["Über ÜBER"]) == {"uber": 2}
    with pytest.raises(ValueError, match="no words"):
        train(["", " \t\u200b"], vocab_size=100, progress=False)
