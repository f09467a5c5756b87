"""tokenizer.py trainer: WordPiece's likelihood merges by hand, and incremental == full recount."""
import math
import random
from collections import Counter
from dataclasses import replace

import pytest

from tokenizer import CONFIG, count_words, learn_vocab, likelihood_gain, pair_score, train

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_first_merges_by_hand():
    """The HF course's table (ch. 6.6): hug 10, pug 5, pun 12, bun 4, hugs 5.

    Units: h 15, p 17, b 4, ##u 36, ##g 20, ##n 16, ##s 5.
    1. (##g,##s) 5/(20*5) = 1/20 beats every other pair, all at 1/36 (e.g. (h,##u) 15/(15*36))
       -> ##gs
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
    vocab = learn_vocab(counts, vocab_size=5 + 7 + 4 + 9, config=replace(CONFIG, criterion="ratio"))
    assert vocab[:5] == SPECIALS
    assert vocab[5:12] == ["b", "g", "h", "n", "p", "s", "u"]  # the alphabet, as word starts
    assert vocab[12:16] == ["##g", "##n", "##s", "##u"]  # the characters seen inside words
    assert vocab[16:] == ["##gs", "pu", "hu", "bu", "hugs", "hug", "bun", "pun", "pug"]
    assert pair_score(5, 20, 5) == 1 / 20 and pair_score(15, 15, 36) == pytest.approx(1 / 36)


def test_first_merges_by_likelihood_by_hand():
    """The same table with the default criterion,
    count(ab) * log(count(ab) N / (count(a) count(b))).

    N = 15 + 17 + 4 + 36 + 20 + 16 + 5 = 113 units; log(113/36) = 1.1439, log(5.65) = 1.7317.
    1. (##u,##g) 20 * log(20*113/(36*20)) = 22.88 beats (p,##u) 17 * 1.1439 = 19.45,
       (##u,##n) 18.30, (h,##u) 17.16, (##g,##s) 5 * log(5*113/(20*5)) = 8.66,
       (b,##u) 4.58                                                                     -> ##ug
       (now ##u 16, ##ug 20)
    2. (##u,##n) 16 * log(16*113/(16*16)) = 31.28 beats (h,##ug) 15 * log(15*113/(15*20)) = 25.98
       and (p,##u) 12 * log(12*113/(17*16)) = 19.28                                     -> ##un
    3. (h,##ug) 25.98 beats (p,##un) 19.28, (##ug,##s) 8.66, (b,##un) 7.82             -> hug
    The frequent pair wins over the rare one that the ratio prefers (its first merge was ##gs).
    """
    counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    vocab = learn_vocab(counts, vocab_size=5 + 7 + 4 + 3)
    assert vocab[16:] == ["##ug", "##un", "hug"]
    assert likelihood_gain(20, 36, 20, 113) == pytest.approx(22.88, abs=0.01)
    assert likelihood_gain(16, 16, 16, 113) == pytest.approx(31.28, abs=0.01)
    with pytest.raises(ValueError, match="unknown criterion"):
        learn_vocab(counts, vocab_size=30, config=replace(CONFIG, criterion="bpe"))


def test_min_frequency_and_alphabet_limit():
    # ab seen once: with min_frequency=2 no pair qualifies, the vocab stops at the alphabet
    assert (learn_vocab({"ab": 1}, vocab_size=100, config=replace(CONFIG, min_frequency=2))
            == SPECIALS + ["a", "b", "##b"])
    assert (learn_vocab({"ab": 1}, vocab_size=100, config=replace(CONFIG, min_frequency=1))
            == SPECIALS + ["a", "b", "##b", "ab"])
    # limit_alphabet=2 keeps the two most frequent characters (a: 5 + 2 + 1 = 8, b: 5; z: 1), "az"
    # is left out
    assert (learn_vocab({"ab": 5, "a": 2, "az": 1}, vocab_size=100,
                        config=replace(CONFIG, limit_alphabet=2))
            == SPECIALS + ["a", "b", "##b", "ab"])
    with pytest.raises(ValueError, match="vocab_size"):
        learn_vocab({"abc": 3}, vocab_size=7)


def naive_score(criterion, c, ca, cb, total):
    return pair_score(c, ca, cb) if criterion == "ratio" else c * math.log(c * total / (ca * cb))


def naive_learn_vocab(word_counts, vocab_size, criterion, min_frequency=2):
    """The same algorithm with a full recount of every pair and unit before each merge."""
    words = {w: [w[0]] + ["##" + c for c in w[1:]] for w in word_counts}
    total = sum(n * len(w) for w, n in word_counts.items())  # N: the units before the first merge
    alphabet = sorted({c for w in word_counts for c in w})
    vocab = SPECIALS + alphabet + sorted({u for units in words.values() for u in units[1:]})
    while len(vocab) < vocab_size:
        units, pairs = Counter(), Counter()
        for w, n in word_counts.items():
            for u in words[w]:
                units[u] += n
            for p in zip(words[w], words[w][1:]):
                pairs[p] += n
        candidates = [(-naive_score(criterion, c, units[p[0]], units[p[1]], total), -c, p)
                      for p, c in pairs.items() if c >= min_frequency]
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
            for criterion in ("likelihood", "ratio"):
                assert (learn_vocab(counts, size, config=replace(CONFIG, criterion=criterion)) ==
                        naive_learn_vocab(counts, size, criterion)), (trial, size, criterion)


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
