"""Part 2's checks of exercises 6-9 reject named wrong versions
(exercises/check_section2_sampling.py)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from test_exercises import rejects, solution

import electra
from exercises import check_section2_sampling as part

# -----------------------------------------------------------------------------
# Exercise 6: mask_positions


def _mask_with(candidate_fn=None, count_n=None, round_fn=torch.round, ordered=False):
    """A mask_positions variant built from electra.py's, with one step changed."""

    def mask_positions(x, attention_mask, config, rng=None):
        B, T = x.shape
        K = min(config.max_predictions, T)
        candidate = electra.candidates(x, attention_mask, config)
        if candidate_fn is not None:
            candidate = candidate_fn(x, attention_mask, config)
        n = (attention_mask.sum(dim=1).float() if count_n is None
             else count_n(x, attention_mask, candidate))
        k = round_fn(n * config.mask_prob).long().clamp(1, K)
        k = torch.minimum(k, candidate.sum(dim=1))
        keys = torch.rand(B, T, generator=rng) + (~candidate).float()
        if ordered:
            keys = torch.arange(T).float()[None, :].expand(B, T) + 2 * T * (~candidate).float()
        m = keys.argsort(dim=1)[:, :K]
        return m, torch.arange(K)[None, :] < k[:, None]

    return mask_positions


# -----------------------------------------------------------------------------
# Exercise 7: mask_tokens


def _bert_80_10_10(x, m, m_valid, config, rng=None):
    return electra.bert_mask_tokens(x, m, m_valid, config, rng)


def _bert_split_the_rest(x, m, m_valid, config, rng=None):
    """[MASK] with mask_token_prob, as asked, but the rest split into random tokens and kept
    ones as BERT does."""
    x_m = x.gather(1, m)
    u = torch.rand(m.shape, generator=rng)
    rest = torch.randint(0, config.vocab_size, m.shape, generator=rng)
    keep_half = u >= (1 + config.mask_token_prob) / 2
    values = torch.where(u < config.mask_token_prob, torch.full_like(x_m, config.mask_id),
                         torch.where(keep_half, x_m, rest))
    return x.scatter(1, m, torch.where(m_valid, values, x_m))


def _mask_tokens_with(prob=None, ignore_valid=False, in_place=False, fixed_count=False):
    def mask_tokens(x, m, m_valid, config, rng=None):
        p = config.mask_token_prob if prob is None else prob
        u = torch.rand(m.shape, generator=rng)
        if fixed_count:  # the first round(0.85 k) used slots of each row, always
            k = m_valid.sum(dim=1, keepdim=True)
            to_mask = torch.arange(m.shape[1])[None, :] < torch.round(p * k)
        else:
            to_mask = u < p
        if not ignore_valid:
            to_mask = to_mask & m_valid
        x_m = x.gather(1, m)
        values = torch.where(to_mask, torch.full_like(x_m, config.mask_id), x_m)
        return x.scatter_(1, m, values) if in_place else x.scatter(1, m, values)

    return mask_tokens


# -----------------------------------------------------------------------------
# Exercise 8: Generator.logits


class _Untied(electra.Generator):
    """A separate output matrix instead of the word embedding e."""

    def __init__(self, config, embeddings=None):
        super().__init__(config, embeddings)
        self.decoder = nn.Linear(config.embedding_size, config.vocab_size, bias=False)

    def logits(self, h, m):
        h_m = h.gather(1, m[..., None].expand(-1, -1, h.shape[-1]))
        return self.decoder(self.head_ln(F.gelu(self.head(h_m)))) + self.output_bias


class _NoBias(electra.Generator):
    def logits(self, h, m):
        h_m = h.gather(1, m[..., None].expand(-1, -1, h.shape[-1]))
        return self.head_ln(F.gelu(self.head(h_m))) @ self.embeddings.word.weight.T


class _EveryPosition(electra.Generator):
    def logits(self, h, m):
        return self.head_ln(F.gelu(self.head(h))) @ self.embeddings.word.weight.T \
            + self.output_bias


class _NoLayerNorm(electra.Generator):
    def logits(self, h, m):
        h_m = h.gather(1, m[..., None].expand(-1, -1, h.shape[-1]))
        return F.gelu(self.head(h_m)) @ self.embeddings.word.weight.T + self.output_bias


class _NoGelu(electra.Generator):
    def logits(self, h, m):
        h_m = h.gather(1, m[..., None].expand(-1, -1, h.shape[-1]))
        return self.head_ln(self.head(h_m)) @ self.embeddings.word.weight.T + self.output_bias


class _FirstKPositions(electra.Generator):
    """The first K positions of each row instead of the positions m."""

    def logits(self, h, m):
        h_m = h[:, : m.shape[1]]
        return self.head_ln(F.gelu(self.head(h_m))) @ self.embeddings.word.weight.T \
            + self.output_bias


# -----------------------------------------------------------------------------
# Exercise 9: sample


def _gumbel(shape, rng):
    u = torch.rand(shape, generator=rng).clamp_min(1e-9)
    return -torch.log((-torch.log(u)).clamp_min(1e-9))


def _sample_with(scale=lambda z, T: z / T, after=False, noise=True, straight_through=False):
    def sample(logits, temperature=1.0, rng=None):
        g = _gumbel(logits.shape, rng) if noise else 0.0
        z = scale(logits, temperature)
        if after:  # the noise added first, then divided: the argmax ignores T
            z = (logits + g) / temperature
        elif noise:
            z = z + g
        if straight_through:  # the hard sample with the soft sample's gradient, as ids
            soft = F.softmax(z, dim=-1)
            hard = F.one_hot(z.argmax(-1), logits.shape[-1]).float()
            one_hot = hard + soft - soft.detach()
            return (one_hot * torch.arange(logits.shape[-1])).sum(-1)
        return z.detach().argmax(dim=-1)

    return sample


WRONG = {
    # 6
    "mask_positions: masks [CLS] and [SEP]": (part.check_mask_positions, solution(
        mask_positions=_mask_with(
            candidate_fn=lambda x, a, c: a.bool() & (x != c.pad_id) & (x != c.mask_id)))),
    "mask_positions: masks over padding": (part.check_mask_positions, solution(
        mask_positions=_mask_with(
            candidate_fn=lambda x, a, c: (x != c.cls_id) & (x != c.sep_id) & (x != c.mask_id)))),
    "mask_positions: n without [CLS]/[SEP]": (part.check_mask_positions, solution(
        mask_positions=_mask_with(count_n=lambda x, a, cand: cand.sum(dim=1).float()))),
    "mask_positions: the paper's ceiling instead of round": (part.check_mask_positions, solution(
        mask_positions=_mask_with(round_fn=torch.ceil))),
    "mask_positions: floor instead of round": (part.check_mask_positions, solution(
        mask_positions=_mask_with(round_fn=torch.floor))),
    "mask_positions: round half up": (part.check_mask_positions, solution(
        mask_positions=_mask_with(round_fn=lambda t: torch.floor(t + 0.5)))),
    "mask_positions: always the first candidates": (part.check_mask_positions, solution(
        mask_positions=_mask_with(ordered=True))),
    # 7
    "mask_tokens: BERT's 80/10/10 (random tokens)": (part.check_mask_tokens, solution(
        mask_tokens=_bert_80_10_10)),
    "mask_tokens: [MASK] as asked, the rest half random": (part.check_mask_tokens, solution(
        mask_tokens=_bert_split_the_rest)),
    "mask_tokens: masks every chosen token": (part.check_mask_tokens, solution(
        mask_tokens=_mask_tokens_with(prob=1.0))),
    "mask_tokens: masks the m_valid False slots too": (part.check_mask_tokens, solution(
        mask_tokens=_mask_tokens_with(ignore_valid=True))),
    "mask_tokens: 0.85 hard-coded, config ignored": (part.check_mask_tokens, solution(
        mask_tokens=_mask_tokens_with(prob=0.85))),
    "mask_tokens: BERT's 80% [MASK], the rest kept": (part.check_mask_tokens, solution(
        mask_tokens=_mask_tokens_with(prob=0.8))),
    "mask_tokens: a fixed number per row": (part.check_mask_tokens, solution(
        mask_tokens=_mask_tokens_with(fixed_count=True))),
    "mask_tokens: writes into x": (part.check_mask_tokens, solution(
        mask_tokens=_mask_tokens_with(in_place=True))),
    # 8
    "Generator.logits: untied, a separate output matrix": (part.check_generator_logits,
                                                           solution(Generator=_Untied)),
    "Generator.logits: no output bias": (part.check_generator_logits,
                                         solution(Generator=_NoBias)),
    "Generator.logits: at every position": (part.check_generator_logits,
                                            solution(Generator=_EveryPosition)),
    "Generator.logits: no LayerNorm": (part.check_generator_logits,
                                       solution(Generator=_NoLayerNorm)),
    "Generator.logits: no GELU": (part.check_generator_logits, solution(Generator=_NoGelu)),
    "Generator.logits: the first K positions, not m": (part.check_generator_logits,
                                                       solution(Generator=_FirstKPositions)),
    # 9
    "sample: ignores the temperature": (part.check_sample, solution(
        sample=_sample_with(scale=lambda z, T: z))),
    "sample: divides after adding the noise": (part.check_sample, solution(
        sample=_sample_with(after=True))),
    "sample: multiplies by the temperature": (part.check_sample, solution(
        sample=_sample_with(scale=lambda z, T: z * T))),
    "sample: argmax without noise": (part.check_sample, solution(
        sample=_sample_with(noise=False))),
    "sample: keeps the gradient (straight-through)": (part.check_sample, solution(
        sample=_sample_with(straight_through=True))),
}


@pytest.mark.parametrize("name", WRONG)
def test_check_rejects(name):
    check, student = WRONG[name]
    rejects(check, student)


# The counts over many draws reject these on their own, whatever the worked examples say.
BY_COUNTS = {
    "mask_tokens: BERT's 80/10/10 (random tokens)": (part._mask_tokens_over_many_rows,
                                                     _bert_80_10_10),
    "mask_tokens: [MASK] as asked, the rest half random": (part._mask_tokens_over_many_rows,
                                                           _bert_split_the_rest),
    "mask_tokens: masks every chosen token": (part._mask_tokens_over_many_rows,
                                              _mask_tokens_with(prob=1.0)),
    "mask_tokens: masks the m_valid False slots too": (part._mask_tokens_over_many_rows,
                                                       _mask_tokens_with(ignore_valid=True)),
    "sample: ignores the temperature": (part._sample_frequencies,
                                        _sample_with(scale=lambda z, T: z)),
    "sample: divides after adding the noise": (part._sample_frequencies,
                                               _sample_with(after=True)),
    "sample: multiplies by the temperature": (part._sample_frequencies,
                                              _sample_with(scale=lambda z, T: z * T)),
    "sample: argmax without noise": (part._sample_frequencies, _sample_with(noise=False)),
}


@pytest.mark.parametrize("name", BY_COUNTS)
def test_the_counts_reject(name):
    counts, wrong = BY_COUNTS[name]
    with pytest.raises(AssertionError):
        counts(wrong)


def test_a_sampler_by_multinomial_in_another_order_passes():
    """Any correct sampler passes: torch.multinomial on softmax(logits / T) draws its numbers
    differently from the Gumbel-max trick."""

    @torch.no_grad()
    def sample(logits, temperature=1.0, rng=None):
        p = F.softmax(logits.float() / temperature, dim=-1)
        flat = torch.multinomial(p.reshape(-1, p.shape[-1]), 1, generator=rng)
        return flat.reshape(p.shape[:-1])

    part.check_sample(solution(sample=sample))
