"""ELECTRA from scratch: the model, masking, sampling and losses of the paper, in plain PyTorch.

Clark, Luong, Le, Manning (2020). "ELECTRA: Pre-training Text Encoders as Discriminators Rather
Than Generators." arXiv:2003.10555. Section numbers below refer to that paper.

One pre-training step (Section 2, Figure 2), the official code's named steps:

    m        = mask_positions(x)                     positions to mask,      m_i ~ unif{1, n}
    x_masked = REPLACE(x, m, [MASK])                 mask_tokens()
    p_G      = generator(x_masked)                   only at the masked positions
    x_hat    ~ p_G                                   sample(), no gradient
    x_corrupt= REPLACE(x, m, x_hat)                  replace()
    D        = discriminator(x_corrupt)              D(x, t) = P(token t is original)
    L        = L_MLM + lam * L_Disc                  mlm_loss(), disc_loss(), electra_loss()

Conventions: shapes are written [B, T, H] = [batch, sequence, hidden]; K = the number of masked
slots per sequence (config.max_predictions); V = vocabulary size.

Sign convention: the paper's D(x, t) is the probability that token t is *original*. The official
TensorFlow code and HuggingFace predict *replaced*. We follow the paper everywhere; the checkpoint
converters at the bottom flip the sign of the last layer.
"""

import math
from dataclasses import dataclass, fields
from dataclasses import replace as dc_replace

import torch
import torch.nn as nn
import torch.nn.functional as F

# -----------------------------------------------------------------------------
# Configuration


@dataclass
class ElectraConfig:
    # --- discriminator architecture (paper Table 6; official configure_pretraining.py) ---
    vocab_size: int = 30522  # BERT's uncased WordPiece vocab (paper Sec. 3.1); set from the tokenizer
    embedding_size: int = 128  # Small uses 128 and projects to hidden (Table 6, "Embedding Size")
    hidden_size: int = 256  # Table 6
    num_layers: int = 12  # Table 6
    num_heads: int = 4  # Table 6
    intermediate_size: int = 1024  # FFN inner size, Table 6
    max_position: int = 512  # BERT's position table; Small trains at seq 128 but keeps 512 rows
    type_vocab_size: int = 2  # segments A and B, as BERT
    dropout: float = 0.1  # hidden dropout, Table 6
    attention_dropout: float = 0.1  # attention-probability dropout, Table 6
    layer_norm_eps: float = 1e-12  # official modeling.py (BERT's TF LayerNorm epsilon)
    init_std: float = 0.02  # N(0, 0.02) init, official modeling.py initializer_range
    # --- generator (Section 3.2 "Smaller Generators", Table 6 "Generator Size") ---
    generator_fraction: float = 0.25  # generator hidden = fraction * discriminator hidden (1/4 Small)
    generator_layers: float = 1.0  # generator depth = round(this * discriminator layers) (official
    # `generator_layers`, 1.0 for every released model: G is narrower, not shallower)
    # --- masking (Section 2; official pretrain_helpers.mask) ---
    mask_prob: float = 0.15  # k = round(mask_prob * n) positions masked (Sec. 2; 25% for Large, Table 6)
    max_predictions: int = 19  # cap on k per sequence; official max_predictions_per_seq = 19 at seq 128
    mask_token_prob: float = 0.85  # masked positions that become [MASK]; the rest keep the token
    # (official pretrain_helpers.mask: tf.less(uniform, 0.85); the paper never uses random tokens)
    temperature: float = 1.0  # sampling temperature of p_G (official `temperature`, 1.0)
    lam: float = 50.0  # lambda in L = L_MLM + lambda * L_Disc (Sec. 2; official disc_weight = 50)
    # --- objective ---
    objective: str = "electra"  # one of OBJECTIVES: ELECTRA, BERT (Table 1) or a Sec. 3.5 ablation
    bert_mask_token_prob: float = 0.8  # BERT's 80/10/10 rule (Devlin et al. 2019, Sec. 3.1)
    bert_random_token_prob: float = 0.1  # BERT: 10% random token (and 10% unchanged)
    # --- implementation ---
    fast_attention: bool = True  # F.scaled_dot_product_attention; False = the hand-written reference
    pad_id: int = 0  # special ids default to BERT's vocab; set them from the tokenizer
    cls_id: int = 101
    sep_id: int = 102
    mask_id: int = 103

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads


# Pre-training objectives. "electra" and "bert" are the paper's main comparison (Table 1); the other
# three are Section 3.5's efficiency ablations (Table 5), each defined where Electra.forward runs it.
OBJECTIVES = ("electra", "bert", "electra_15", "replace_mlm", "all_tokens_mlm")

# Model presets. small/base/large are the paper's (Table 6; official configure_pretraining.py).
# Training recipes (batch, lr, steps, sequence length) belong to train.py.
SIZES = {
    # ours, for CPUs: a step at batch 32, seq 128 takes ~0.4 s on 2 cores. Its vocab is trained on
    # the corpus at 8192 pieces: sampling from p_G and the MLM softmax cost O(V) per masked token,
    # and at V = 30522 they alone take most of a CPU step. Three values differ from the paper's
    # Small, so that D visibly learns within a 15-minute CPU run (measured in experiments/
    # cpu_preset.py; at the paper's values D's held-out AUC stays at 0.50-0.57, no better than a
    # detector that sees only the token, for thousands of updates):
    # - temperature 2 (official `temperature`, 1.0 in the paper): G's samples stay detectable
    #   while D learns context. At 1.0 G matches the corpus' word frequencies within ~100 updates,
    #   and D, which cannot yet use its context, has nothing left to go on.
    # - mask_prob 0.25 (the paper's Large uses 25%, Table 6): more replaced tokens per update,
    #   so more signal for D, and a replaced token is less rare (recall at 0.5 rises).
    # - no dropout: a 15-minute run sees 13 books 2.6 times, too little to overfit (held-out and
    #   training L_MLM end 0.1 nats apart).
    "tiny": dict(vocab_size=8192, embedding_size=128, hidden_size=128, num_layers=4, num_heads=2, intermediate_size=512,
                 generator_fraction=0.25, temperature=2.0, mask_prob=0.25, dropout=0.0, attention_dropout=0.0),
    "small": dict(embedding_size=128, hidden_size=256, num_layers=12, num_heads=4, intermediate_size=1024,
                  generator_fraction=1 / 4),
    "base": dict(embedding_size=768, hidden_size=768, num_layers=12, num_heads=12, intermediate_size=3072,
                 generator_fraction=1 / 3),
    "large": dict(embedding_size=1024, hidden_size=1024, num_layers=24, num_heads=16,
                  intermediate_size=4096, generator_fraction=1 / 4, mask_prob=0.25),
}


def get_config(size: str, **overrides) -> ElectraConfig:
    """The paper's config for `size` ("tiny", "small", "base", "large"), with `overrides` applied."""
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}: choose one of {', '.join(SIZES)}")
    names = {f.name for f in fields(ElectraConfig)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown}: valid fields are {sorted(names)}")
    return ElectraConfig(**{**SIZES[size], **overrides})


def check_config(config: ElectraConfig) -> None:
    """Raise ValueError, naming the field, for a config no model can be built from (the discriminator's
    and the generator_config derived from it)."""
    c = config
    if c.objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {c.objective!r}: choose one of {', '.join(OBJECTIVES)}")
    for name in ("vocab_size", "embedding_size", "hidden_size", "num_layers", "num_heads", "intermediate_size",
                 "max_position", "type_vocab_size", "max_predictions"):
        if getattr(c, name) < 1:
            raise ValueError(f"{name} = {getattr(c, name)}: must be at least 1")
    for name in ("dropout", "attention_dropout", "mask_prob", "mask_token_prob", "bert_mask_token_prob",
                 "bert_random_token_prob"):
        if not 0 <= getattr(c, name) <= 1:
            raise ValueError(f"{name} = {getattr(c, name)}: must be a probability in [0, 1]")
    if c.bert_mask_token_prob + c.bert_random_token_prob > 1:
        raise ValueError(f"bert_mask_token_prob + bert_random_token_prob = "
                         f"{c.bert_mask_token_prob + c.bert_random_token_prob}: must be at most 1")
    for name in ("temperature", "layer_norm_eps", "init_std"):
        if not (math.isfinite(getattr(c, name)) and getattr(c, name) > 0):
            raise ValueError(f"{name} = {getattr(c, name)}: must be a positive number")
    if not (math.isfinite(c.lam) and c.lam >= 0):
        raise ValueError(f"lam = {c.lam}: must be a number >= 0")
    if not 0 < c.generator_fraction <= 1:
        raise ValueError(f"generator_fraction = {c.generator_fraction}: must be in (0, 1]")
    if c.hidden_size % c.num_heads:
        raise ValueError(f"hidden_size {c.hidden_size} is not divisible by num_heads {c.num_heads}: each head "
                         f"gets hidden_size / num_heads dimensions")
    g = generator_config(c)
    if g.hidden_size < 1 or g.hidden_size % g.num_heads:
        raise ValueError(f"generator_fraction {c.generator_fraction} gives the generator hidden size "
                         f"{g.hidden_size} with {g.num_heads} head(s) (hidden // 64): choose a fraction of "
                         f"hidden_size {c.hidden_size} that is at least 1 and divisible by its heads")


def generator_config(config: ElectraConfig) -> ElectraConfig:
    """The generator's config, derived from the discriminator's as the official code does.

    Official run_pretraining.get_generator_config: hidden = round(fraction * hidden), layers =
    round(generator_layers * layers), FFN = 4 * hidden, heads = max(1, hidden // 64). For the
    paper's presets (generator_layers 1: every layer kept) this is the same as
    scaling hidden, heads and FFN by the fraction: Small 256/4/1024 -> 64/1/256, Base 768/12/3072 ->
    256/4/1024. The embedding size is kept: the embeddings are shared (Section 3.2).
    """
    hidden = int(round(config.hidden_size * config.generator_fraction))
    return dc_replace(config, hidden_size=hidden, intermediate_size=4 * hidden,
                      num_heads=max(1, hidden // 64),
                      num_layers=int(round(config.num_layers * config.generator_layers)))


# -----------------------------------------------------------------------------
# The Transformer encoder (BERT's, post-LayerNorm)


class Embeddings(nn.Module):
    """Token + position + segment embeddings, LayerNorm, dropout (BERT). Shared by G and D."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.embedding_size)
        self.position = nn.Embedding(config.max_position, config.embedding_size)
        self.segment = nn.Embedding(config.type_vocab_size, config.embedding_size)
        self.ln = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, input_ids, segment_ids):
        T = input_ids.shape[1]
        pos = torch.arange(T, device=input_ids.device)
        e = self.word(input_ids) + self.position(pos) + self.segment(segment_ids)  # [B, T, E]
        return self.drop(self.ln(e))


class SelfAttention(nn.Module):
    """Multi-head self-attention, softmax(Q K^T / sqrt(d)) V, with a padding mask."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.n_head, self.fast = config.num_heads, config.fast_attention
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)  # Q, K, V in one matmul
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.p_drop = config.attention_dropout
        self.attn_drop = nn.Dropout(config.attention_dropout)

    def forward(self, h, keep):
        # h: [B, T, H]; keep: [B, 1, 1, T] bool, True where the key is a real (non-padding) token
        B, T, H = h.shape
        q, k, v = self.qkv(h).split(H, dim=-1)  # 3 x [B, T, H]
        # [B, T, H] -> [B, T, heads, d] -> [B, heads, T, d]
        q, k, v = (t.view(B, T, self.n_head, H // self.n_head).transpose(1, 2) for t in (q, k, v))
        if self.fast:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                               dropout_p=self.p_drop if self.training else 0.0)
        else:
            y = attention_reference(q, k, v, keep, self.attn_drop)
        y = y.transpose(1, 2).reshape(B, T, H)  # [B, heads, T, d] -> [B, T, H]
        return self.out(y)


def attention_reference(q, k, v, keep, dropout: nn.Module):
    """Scaled dot-product attention written out (Vaswani et al. 2017, eq. 1); the fast path's reference.

    q, k, v: [B, heads, T, d]; keep: [B, 1, 1, T] bool. Padding keys get a score of -inf
    (the dtype's minimum, as BERT does, so a row never becomes all -inf).
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B, heads, T, T]
    scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    return dropout(scores.softmax(dim=-1)) @ v  # [B, heads, T, d]


class Block(nn.Module):
    """A post-LayerNorm Transformer block (BERT): h = LN(h + Attn(h)); h = LN(h + FFN(h))."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.attn = SelfAttention(config)
        self.ln1 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.ln2 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, h, keep):
        h = self.ln1(h + self.drop(self.attn(h, keep)))
        # GELU in its exact erf form, as BERT and the official code use
        return self.ln2(h + self.drop(self.fc2(F.gelu(self.fc1(h)))))


class Encoder(nn.Module):
    """The shared embeddings, this model's projection to its hidden size, and the blocks."""

    def __init__(self, config: ElectraConfig, embeddings: Embeddings | None = None):
        super().__init__()
        self.config = config
        self.embeddings = embeddings if embeddings is not None else Embeddings(config)
        # G and D have different hidden sizes but one embedding table: each projects it (Sec. 3.2)
        self.embeddings_project = (nn.Linear(config.embedding_size, config.hidden_size)
                                   if config.embedding_size != config.hidden_size else None)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_layers))

    def hidden_states(self, input_ids, segment_ids, attention_mask):
        """input_ids, segment_ids, attention_mask: [B, T] -> the last layer's states [B, T, H]."""
        h = self.embeddings(input_ids, segment_ids)  # [B, T, E]
        if self.embeddings_project is not None:
            h = self.embeddings_project(h)  # [B, T, H]
        keep = attention_mask.bool()[:, None, None, :]  # [B, T] -> [B, 1, 1, T], broadcast over heads, queries
        for block in self.layers:
            h = block(h, keep)
        return h


class Generator(Encoder):
    """The generator G: a small masked language model (Section 2).

    p_G(x_t | x) = exp(e(x_t)^T h_G(x)_t) / sum_x' exp(e(x')^T h_G(x)_t)        (paper, Sec. 2)

    Head as the official code: dense -> GELU -> LayerNorm -> the shared token embedding e (tied)
    + an output bias. Logits are computed only at the masked positions: a V-way softmax at every
    position would waste most of the step.
    """

    def __init__(self, config: ElectraConfig, embeddings: Embeddings | None = None):
        super().__init__(config, embeddings)
        self.head = nn.Linear(config.hidden_size, config.embedding_size)
        self.head_ln = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def logits(self, h, m):
        """h: [B, T, Hg] states; m: [B, K] positions -> logits [B, K, V] of p_G at those positions."""
        h_m = h.gather(1, m[..., None].expand(-1, -1, h.shape[-1]))  # [B, K, Hg]
        z = self.head_ln(F.gelu(self.head(h_m)))  # [B, K, E]
        return z @ self.embeddings.word.weight.T + self.output_bias  # [B, K, V]


class Discriminator(Encoder):
    """The discriminator D: for each position t, the probability that x_t is original (Section 2).

    D(x, t) = sigmoid(w^T h_D(x)_t)                                              (paper, Sec. 2)

    Head as the official code: dense -> GELU -> dense to one logit (the paper writes only w; the
    extra dense layer is the official code's). forward() returns the logit of *original*.
    """

    def __init__(self, config: ElectraConfig, embeddings: Embeddings | None = None):
        super().__init__(config, embeddings)
        self.head = nn.Linear(config.hidden_size, config.hidden_size)
        self.head_out = nn.Linear(config.hidden_size, 1)

    def forward(self, input_ids, segment_ids, attention_mask):
        h = self.hidden_states(input_ids, segment_ids, attention_mask)  # [B, T, H]
        return self.head_out(F.gelu(self.head(h))).squeeze(-1)  # [B, T, 1] -> [B, T]


def init_weights(module: nn.Module, std: float):
    """N(0, std) for matrices and embeddings, zero biases, LayerNorm = identity (official modeling.py;
    it uses a truncated normal, we use a plain normal as HuggingFace does)."""
    for mod in module.modules():
        if isinstance(mod, (nn.Linear, nn.Embedding)):
            nn.init.normal_(mod.weight, std=std)
        if isinstance(mod, nn.Linear) and mod.bias is not None:
            nn.init.zeros_(mod.bias)
        if isinstance(mod, nn.LayerNorm):
            nn.init.ones_(mod.weight)
            nn.init.zeros_(mod.bias)


# -----------------------------------------------------------------------------
# The steps of pre-training, one function each (Section 2)


def _generator(rng: torch.Generator | None) -> dict:
    """generator=rng for torch.rand/randint, or nothing (torch's global generator) when rng is None.
    Not generator=None: torch.compile rejects that once shapes are dynamic (torch 2.13), as they
    become when a held-out batch is smaller than a training batch."""
    return {} if rng is None else {"generator": rng}


def mask_positions(x, attention_mask, config: ElectraConfig, rng: torch.Generator | None = None):
    """Choose the positions to mask: m_i ~ unif{1, n} for i = 1..k                 (paper, Sec. 2)

    Per sequence, k = max(1, min(max_predictions, round(mask_prob * n))) where n counts the
    non-padding tokens ([CLS] and [SEP] included, as the official pretrain_helpers.mask counts).
    Candidates are the tokens that are not [CLS], [SEP], [MASK] or padding.

    Deviation: the official code draws the k positions *with* replacement and so sometimes masks
    fewer than k; we draw k distinct positions (without replacement), which is what the paper says.

    Returns m: [B, K] long, K = min(max_predictions, T): positions in random order, all distinct
    within a row; m_valid: [B, K] bool, True for the first k slots of each row (the masked ones).
    The other slots point at unmasked positions and must be ignored.

    Example: n = 10 tokens -> k = round(1.5) = 2 (round half to even, as tf.round and torch.round).
    """
    B, T = x.shape
    K = min(config.max_predictions, T)
    candidate = attention_mask.bool()
    for special in (config.cls_id, config.sep_id, config.mask_id, config.pad_id):
        candidate = candidate & (x != special)
    n = attention_mask.sum(dim=1).float()  # [B]
    k = torch.round(n * config.mask_prob).long().clamp(1, K)  # [B]
    k = torch.minimum(k, candidate.sum(dim=1))  # never more than there are candidates
    # A uniformly random order of the candidates: sort random keys, candidates first.
    keys = torch.rand(B, T, device=x.device, **_generator(rng)) + (~candidate).float()  # [B, T], non-candidates > 1
    m = keys.argsort(dim=1)[:, :K]  # [B, K]
    m_valid = torch.arange(K, device=x.device)[None, :] < k[:, None]  # [B, K]
    return m, m_valid


def replace(x, m, values):
    """REPLACE(x, m, values): x with x[b, m[b, i]] := values[b, i]                  (paper, Sec. 2)

    x: [B, T]; m: [B, K] positions (distinct within a row); values: [B, K]. Returns a new tensor.
    Example: replace([[5, 6, 7]], [[2, 0]], [[9, 8]]) = [[8, 6, 9]].
    """
    return x.scatter(1, m, values)


def mask_tokens(x, m, m_valid, config: ElectraConfig, rng: torch.Generator | None = None):
    """x_masked = REPLACE(x, m, [MASK])                                              (paper, Sec. 2)

    As the official code: each masked position becomes [MASK] with probability mask_token_prob
    (0.85) and keeps its original token otherwise (0.15); ELECTRA never inserts random tokens.
    """
    x_m = x.gather(1, m)  # [B, K] the original tokens at the chosen positions
    to_mask = m_valid & (torch.rand(m.shape, device=x.device, **_generator(rng)) < config.mask_token_prob)
    return replace(x, m, torch.where(to_mask, torch.full_like(x_m, config.mask_id), x_m))


def bert_mask_tokens(x, m, m_valid, config: ElectraConfig, rng: torch.Generator | None = None):
    """BERT's masking (Devlin et al. 2019, Sec. 3.1): of the chosen positions 80% become [MASK],
    10% a random token, 10% keep the original. The baseline of the paper's Table 1."""
    x_m = x.gather(1, m)  # [B, K]
    u = torch.rand(m.shape, device=x.device, **_generator(rng))
    random_ids = torch.randint(0, config.vocab_size, m.shape, device=x.device, **_generator(rng))
    values = torch.where(u < config.bert_mask_token_prob, torch.full_like(x_m, config.mask_id),
                         torch.where(u < config.bert_mask_token_prob + config.bert_random_token_prob,
                                     random_ids, x_m))
    return replace(x, m, torch.where(m_valid, values, x_m))


@torch.no_grad()
def sample(logits, temperature: float = 1.0, rng: torch.Generator | None = None):
    """x_hat_i ~ p_G(x_i | x_masked) for i in m                                      (paper, Sec. 2)

    logits: [..., V] -> token ids [...]. Sampled at `temperature` with the Gumbel-max trick, as the
    official sample_from_softmax: argmax(logits / temperature + g), g = -log(-log(u)), u ~ U(0, 1).
    No gradient flows through the sample (the paper: "we do not back-propagate the discriminator
    loss through the generator", it is not possible through sampling anyway).
    """
    u = torch.rand(logits.shape, device=logits.device, **_generator(rng), dtype=torch.float32)
    gumbel = -torch.log((-torch.log(u.clamp_min(1e-9))).clamp_min(1e-9))  # clamps keep both logs finite
    return (logits.float() / temperature + gumbel).argmax(dim=-1)


def mlm_loss(logits, targets, m_valid):
    """L_MLM(x, theta_G) = E[ sum_{i in m} -log p_G(x_i | x_masked) ]               (paper, Sec. 2)

    Averaged over the masked positions of the batch, as the official code does.
    logits: [B, K, V]; targets: [B, K] the original tokens x_i; m_valid: [B, K] bool.
    """
    nll = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), reduction="none")  # [B*K]
    w = m_valid.flatten().float()
    return (nll * w).sum() / w.sum().clamp_min(1.0)


def disc_loss(logits, is_original, weights):
    """L_Disc(x, theta_D) = E[ sum_{t=1}^n -1(x_corrupt_t = x_t) log D(x_corrupt, t)
                                           -1(x_corrupt_t != x_t) log(1 - D(x_corrupt, t)) ]  (paper, Sec. 2)

    with D = sigmoid(logits) the probability of *original*. Averaged over the tokens where
    `weights` is 1: for ELECTRA the attention mask, every non-padding token ([CLS] and [SEP]
    included) as the official code does; for the "ELECTRA 15%" ablation only the masked positions.
    logits: [B, T]; is_original: [B, T] bool; weights: [B, T].
    """
    bce = F.binary_cross_entropy_with_logits(logits.float(), is_original.float(), reduction="none")
    w = weights.float()
    return (bce * w).sum() / w.sum().clamp_min(1.0)


def all_tokens_mlm_loss(logits, copy_logits, x_corrupt, x, attention_mask):
    """The All-Tokens MLM ablation's loss (Section 3.5, Table 5).

    The model predicts the identity of *every* token of x_corrupt, not only the masked ones, with
    the paper's explicit copy mechanism: a sigmoid layer gives a copy probability D_t, and
        p(x_t | x_corrupt) = D_t * 1(x_corrupt_t = x_t) + (1 - D_t) * p_MLM(x_t | x_corrupt)
    Loss: the mean of -log p(x_t | x_corrupt) over the non-padding tokens. Computed in log space:
    log p = logaddexp(log D_t, log(1 - D_t) + log p_MLM) where the token is unchanged, and
    log(1 - D_t) + log p_MLM where it was replaced.
    logits: [B, T, V]; copy_logits: [B, T]; x_corrupt, x, attention_mask: [B, T].
    """
    log_p_mlm = logits.float().log_softmax(-1).gather(-1, x[..., None]).squeeze(-1)  # [B, T]
    log_copy, log_no_copy = F.logsigmoid(copy_logits.float()), F.logsigmoid(-copy_logits.float())
    log_p = torch.where(x_corrupt == x, torch.logaddexp(log_copy, log_no_copy + log_p_mlm),
                        log_no_copy + log_p_mlm)
    w = attention_mask.float()
    return -(log_p * w).sum() / w.sum().clamp_min(1.0)


def disc_auc(p_original, is_original, weights):
    """AUC of D's P(replaced) = 1 - D(x, t): the chance that a replaced token scores above an original one.

        AUC = 1 / (n_r n_o) * sum_{replaced i} ( #{original j : s_j < s_i} + 1/2 #{original j : s_j = s_i} )

    with s = 1 - D the score of *replaced*, over the tokens where `weights` is 1 (n_r replaced, n_o
    original). This is the Mann-Whitney rank statistic: each replaced token's rank among the
    originals, ties counted as half. 0.5 is chance (D ranks by nothing), 1.0 a perfect ranking. The
    official code reports the same quantity (run_pretraining.py: disc_auc). Unlike D's accuracy it
    moves as soon as D ranks replaced tokens higher, long before any of them crosses 0.5.
    Sorting and binary search instead of torch.unique keep it free of host syncs (one graph under
    torch.compile). With no replaced or no original token the AUC is undefined; it returns 0.5.

    p_original, is_original, weights: the same shape ([B, T], or flat) -> a 0-dim tensor.
    Example: replaced scores [0.8, 0.4], original scores [0.4, 0.3, 0.1]: 0.8 beats all three (3),
    0.4 beats two and ties one (2.5), AUC = 5.5 / 6 = 0.9167.
    """
    s = 1.0 - p_original.detach().float().flatten()  # [N] score of *replaced*
    w = weights.flatten().bool()
    orig = is_original.flatten() & w
    repl = ~is_original.flatten() & w
    s_orig = torch.where(orig, s, torch.inf).sort().values  # [N] originals ascending, the rest (inf) last
    below = torch.searchsorted(s_orig, s, side="left")  # [N] originals scored strictly lower
    below_or_tied = torch.searchsorted(s_orig, s, side="right")  # [N] ... lower or equal
    wins = (below + below_or_tied).double() / 2  # [N] = below + ties / 2; float64: sums reach ~1e9
    pairs = repl.sum().double() * orig.sum().double()
    auc = torch.where(pairs > 0, (wins * repl).sum() / pairs.clamp_min(1.0), torch.full_like(pairs, 0.5))
    return auc.float()


def electra_loss(l_mlm, l_disc, lam: float):
    """min_{theta_G, theta_D} sum_x L_MLM(x, theta_G) + lambda L_Disc(x, theta_D)  (paper, Sec. 2)."""
    return l_mlm + lam * l_disc


# -----------------------------------------------------------------------------
# The whole model


@dataclass
class ElectraOutput:
    loss: torch.Tensor  # L = L_MLM + lam * L_Disc (ELECTRA) or L_MLM (BERT)
    mlm_loss: torch.Tensor
    disc_loss: torch.Tensor  # L_Disc; 0 for the objectives without a discriminator
    gen_acc: torch.Tensor  # generator's top-1 accuracy at the masked positions
    disc_acc: torch.Tensor  # discriminator's accuracy over non-padding tokens
    disc_precision: torch.Tensor  # of the tokens D calls replaced, the fraction that were
    disc_recall: torch.Tensor  # of the replaced tokens, the fraction D finds
    disc_auc: torch.Tensor  # P(D ranks a replaced token above an original one), disc_auc()
    replaced_frac: torch.Tensor  # replaced tokens / non-padding tokens
    main_mlm_loss: torch.Tensor  # Replace MLM / All-Tokens MLM: the main model's loss (else 0)
    m: torch.Tensor  # [B, K] masked positions
    m_valid: torch.Tensor  # [B, K]
    x_masked: torch.Tensor  # [B, T]
    x_corrupt: torch.Tensor | None  # [B, T] (None for BERT)
    p_original: torch.Tensor | None  # [B, T] D(x_corrupt, t) (None for BERT)

    def metrics(self) -> dict:
        names = ("loss", "mlm_loss", "disc_loss", "gen_acc", "disc_acc", "disc_precision",
                 "disc_recall", "disc_auc", "replaced_frac", "main_mlm_loss")
        return {n: getattr(self, n).item() for n in names}


class Electra(nn.Module):
    """Generator and discriminator trained jointly (objective "electra"), or one of the baselines the
    paper compares with through the same data and code: a BERT masked LM of the discriminator's size
    ("bert"), and the Section 3.5 ablations ("electra_15", "replace_mlm", "all_tokens_mlm").

    Modules: .embeddings (shared); .generator (the small G, all but "bert"); .discriminator
    ("electra", "electra_15"); .mlm, a full-size masked LM ("bert", "replace_mlm", "all_tokens_mlm");
    .copy_head ("all_tokens_mlm"). Absent modules are None.
    """

    def __init__(self, config: ElectraConfig):
        super().__init__()
        check_config(config)
        self.config = config
        obj = config.objective
        self.embeddings = Embeddings(config)  # one module, the same Parameters in G and D
        self.generator = (Generator(generator_config(config), self.embeddings) if obj != "bert" else None)
        self.discriminator = (Discriminator(config, self.embeddings) if obj in ("electra", "electra_15")
                              else None)
        self.mlm = (Generator(config, self.embeddings) if obj in ("bert", "replace_mlm", "all_tokens_mlm")
                    else None)
        self.copy_head = nn.Linear(config.hidden_size, 1) if obj == "all_tokens_mlm" else None
        init_weights(self, config.init_std)

    def forward(self, input_ids, segment_ids, attention_mask, rng: torch.Generator | None = None):
        if self.config.objective == "bert":
            return self._forward_bert(input_ids, segment_ids, attention_mask, rng)
        if self.config.objective in ("replace_mlm", "all_tokens_mlm"):
            return self._forward_mlm_ablation(input_ids, segment_ids, attention_mask, rng)
        cfg, x = self.config, input_ids
        m, m_valid = mask_positions(x, attention_mask, cfg, rng)  # [B, K]
        x_masked = mask_tokens(x, m, m_valid, cfg, rng)  # [B, T]
        h_G = self.generator.hidden_states(x_masked, segment_ids, attention_mask)  # [B, T, Hg]
        logits_G = self.generator.logits(h_G, m)  # [B, K, V]
        x_m = x.gather(1, m)  # [B, K] the original tokens at the masked positions
        l_mlm = mlm_loss(logits_G, x_m, m_valid)
        x_hat = sample(logits_G, cfg.temperature, rng)  # [B, K]
        x_corrupt = replace(x, m, torch.where(m_valid, x_hat, x_m))  # [B, T]
        is_original = x_corrupt == x  # a sample equal to the original counts as original
        logits_D = self.discriminator(x_corrupt, segment_ids, attention_mask)  # [B, T]
        if cfg.objective == "electra_15":
            # ELECTRA 15% (Sec. 3.5): "identical to ELECTRA except the discriminator loss only comes
            # from the 15% of the tokens that were masked out of the input"
            weights = torch.zeros_like(attention_mask).scatter(1, m, m_valid.to(attention_mask.dtype))
        else:
            weights = attention_mask
        l_disc = disc_loss(logits_D, is_original, weights)
        with torch.no_grad():
            real = attention_mask.bool()
            replaced, called_replaced = ~is_original & real, (logits_D < 0) & real
            n_real = real.sum().clamp_min(1)
            stats = dict(
                gen_acc=_masked_accuracy(logits_G, x_m, m_valid),
                disc_acc=((called_replaced == replaced) & real).sum() / n_real,
                disc_precision=(called_replaced & replaced).sum() / called_replaced.sum().clamp_min(1),
                disc_recall=(called_replaced & replaced).sum() / replaced.sum().clamp_min(1),
                disc_auc=disc_auc(torch.sigmoid(logits_D.float()), is_original, attention_mask),
                replaced_frac=replaced.sum() / n_real,
            )
        return ElectraOutput(loss=electra_loss(l_mlm, l_disc, cfg.lam), mlm_loss=l_mlm, disc_loss=l_disc,
                             main_mlm_loss=torch.zeros((), device=x.device), m=m, m_valid=m_valid,
                             x_masked=x_masked, x_corrupt=x_corrupt,
                             p_original=torch.sigmoid(logits_D.detach().float()), **stats)

    def _forward_mlm_ablation(self, x, segment_ids, attention_mask, rng):
        """Replace MLM and All-Tokens MLM (Section 3.5, Table 5). The generator runs as in ELECTRA
        (same masking, same L_MLM, same samples); the main model is a full-size masked LM that reads
        x_corrupt instead of x_masked, so it never sees [MASK]:
        - replace_mlm: "the same as masked language modeling except instead of replacing masked-out
          tokens with [MASK], they are replaced with tokens from a generator model"; it predicts the
          original tokens at the masked positions (mlm_loss).
        - all_tokens_mlm: as Replace MLM, but predicts the identity of every token, with a copy
          mechanism (all_tokens_mlm_loss).
        The total loss is the generator's L_MLM plus the main model's loss (no lambda: both are
        log-likelihoods over a vocabulary).
        """
        cfg = self.config
        m, m_valid = mask_positions(x, attention_mask, cfg, rng)  # [B, K]
        x_masked = mask_tokens(x, m, m_valid, cfg, rng)
        logits_G = self.generator.logits(self.generator.hidden_states(x_masked, segment_ids, attention_mask), m)
        x_m = x.gather(1, m)  # [B, K]
        l_gen = mlm_loss(logits_G, x_m, m_valid)
        x_hat = sample(logits_G, cfg.temperature, rng)
        x_corrupt = replace(x, m, torch.where(m_valid, x_hat, x_m))  # [B, T]
        h = self.mlm.hidden_states(x_corrupt, segment_ids, attention_mask)  # [B, T, H]
        if cfg.objective == "replace_mlm":
            l_main = mlm_loss(self.mlm.logits(h, m), x_m, m_valid)
        else:
            every = torch.arange(x.shape[1], device=x.device).expand(x.shape[0], -1)  # [B, T] all positions
            l_main = all_tokens_mlm_loss(self.mlm.logits(h, every), self.copy_head(h).squeeze(-1),
                                         x_corrupt, x, attention_mask)
        real = attention_mask.bool()
        zero = torch.zeros((), device=x.device)
        return ElectraOutput(loss=l_gen + l_main, mlm_loss=l_gen, disc_loss=zero, main_mlm_loss=l_main,
                             gen_acc=_masked_accuracy(logits_G, x_m, m_valid), disc_acc=zero,
                             disc_precision=zero, disc_recall=zero, disc_auc=zero,
                             replaced_frac=((x_corrupt != x) & real).sum() / real.sum().clamp_min(1),
                             m=m, m_valid=m_valid, x_masked=x_masked, x_corrupt=x_corrupt, p_original=None)

    def _forward_bert(self, x, segment_ids, attention_mask, rng):
        m, m_valid = mask_positions(x, attention_mask, self.config, rng)
        x_masked = bert_mask_tokens(x, m, m_valid, self.config, rng)
        logits = self.mlm.logits(self.mlm.hidden_states(x_masked, segment_ids, attention_mask), m)
        x_m = x.gather(1, m)
        l_mlm = mlm_loss(logits, x_m, m_valid)
        zero = torch.zeros((), device=x.device)
        return ElectraOutput(loss=l_mlm, mlm_loss=l_mlm, disc_loss=zero, main_mlm_loss=zero,
                             gen_acc=_masked_accuracy(logits, x_m, m_valid), disc_acc=zero,
                             disc_precision=zero, disc_recall=zero, disc_auc=zero, replaced_frac=zero, m=m,
                             m_valid=m_valid, x_masked=x_masked, x_corrupt=None, p_original=None)

    @torch.no_grad()
    def p_original(self, input_ids, segment_ids, attention_mask):
        """D(x, t) for every token: [B, T] probabilities that each token is original."""
        return torch.sigmoid(self.discriminator(input_ids, segment_ids, attention_mask).float())

    def fine_tuning_encoder(self) -> "Discriminator":
        """The encoder that fine-tuning starts from: the discriminator (ELECTRA, ELECTRA 15%), or for
        the MLM objectives a Discriminator holding the full-size MLM's embeddings and encoder (its
        head is unused by fine-tuning)."""
        if self.discriminator is not None:
            return self.discriminator
        disc = Discriminator(self.config)
        # Only the encoder's tensors: the MLM head (dense H -> E, LayerNorm E, output bias) and D's head
        # share the name "head" but not its shape once the embedding size differs from the hidden size.
        encoder = {k: v for k, v in self.mlm.state_dict().items() if not k.startswith(("head", "output_bias"))}
        missing, unexpected = disc.load_state_dict(encoder, strict=False)
        assert not unexpected and all(k.startswith("head") for k in missing), (missing, unexpected)
        return disc


def _masked_accuracy(logits, targets, m_valid):
    correct = (logits.argmax(-1) == targets) & m_valid
    return correct.sum() / m_valid.sum().clamp_min(1)


def count_params(module: nn.Module) -> int:
    """Number of distinct parameters (a shared tensor counts once)."""
    return sum(p.numel() for p in module.parameters())


# -----------------------------------------------------------------------------
# Compute: FLOPs of one training step


def _encoder_forward_flops(c: ElectraConfig, seq: int) -> float:
    """Matmul FLOPs (2mn per matrix-vector product) of one sequence through an encoder."""
    H, F_, T = c.hidden_size, c.intermediate_size, seq
    per_token_layer = 2 * H * 3 * H + 2 * H * H + 2 * 2 * H * F_  # QKV, attention output, FFN
    per_token_layer += 2 * 2 * T * H  # Q K^T and (attention weights) V
    proj = 2 * c.embedding_size * H if c.embedding_size != H else 0
    return T * (c.num_layers * per_token_layer + proj)


def flops_per_step(config: ElectraConfig, batch: int, seq: int) -> float:
    """Training FLOPs of one step (forward + backward), our convention.

    Matmuls count 2mn; embedding lookups count 0 (they are gathers); backward = 2 x forward
    (gradients w.r.t. activations and w.r.t. weights), so a step is 3 x forward. The generator's
    output layer runs only at the k = min(max_predictions, round(mask_prob * seq)) masked positions.
    ELECTRA (and ELECTRA 15%): D encoder + D head at every token, G encoder + G head at the
    masked ones. BERT: the full-size encoder + its MLM head at the masked positions. Replace MLM:
    G + the full-size MLM at the masked positions. All-Tokens MLM: G + the full-size MLM at every
    position + the copy head.

    The official flops_computation.py (flops_per_step_official) counts differently: embedding
    lookups as dense one-hot matmuls (2 E V per token, large for small models), the MLM output at
    a fixed 15.625% of positions, a few FLOPs for softmax/LayerNorm/dropout, and backward =
    forward (2 x forward per step). For ELECTRA-Small over 1M steps that script gives 1.29e18;
    the paper's Table 1 reports 1.4e18; our convention gives 1.15e18.
    """
    k = min(config.max_predictions, round(config.mask_prob * seq))
    E, V = config.embedding_size, config.vocab_size

    def mlm_head(c, positions):  # dense hidden -> E, then the tied E -> V output
        return positions * (2 * c.hidden_size * E + 2 * E * V)

    obj, H = config.objective, config.hidden_size
    main = _encoder_forward_flops(config, seq)
    if obj == "bert":
        return 3.0 * batch * (main + mlm_head(config, k))
    g = generator_config(config)
    fwd = _encoder_forward_flops(g, seq) + mlm_head(g, k)
    if obj in ("electra", "electra_15"):
        fwd += main + seq * (2 * H * H + 2 * H)  # D and its dense -> GELU -> logit head
    elif obj == "replace_mlm":
        fwd += main + mlm_head(config, k)
    else:  # all_tokens_mlm
        fwd += main + mlm_head(config, seq) + seq * 2 * H
    return 3.0 * batch * fwd


def flops_per_step_official(config: ElectraConfig, batch: int, seq: int,
                            output_frac: float = 0.15625) -> float:
    """Training FLOPs of one step counted as the official flops_computation.py does (see
    flops_per_step for the differences). Matmuls 2mn; dense embedding lookups; elementwise ops
    counted (dropout 4, LayerNorm 5, GELU 8, softmax 5 per element); backward = forward;
    the MLM output softmax at output_frac = 20/128 of positions; heads = hidden // 64.
    The official script counts only ELECTRA and BERT; the Sec. 3.5 ablations are counted in its
    convention from their parts: Replace MLM = the generator + the full-size MLM (its output at
    output_frac of positions), All-Tokens MLM = the generator + the full-size MLM with its output at
    every position + the copy head (dense H -> 1, then a sigmoid counted as an activation).
    """
    DROP, LN, ACT, SOFT = 4, 5, 8, 5

    def block(h, i, s):
        heads = max(h // 64, 1)
        attn = 2 * 3 * h * h + 3 * h + 2 * h * s + (SOFT + DROP + 1) * s * heads + 2 * h * s
        attn += 2 * h * h + h + DROP * h + h + LN  # output dense, bias, dropout, residual, LayerNorm
        ffn = 2 * h * i + ACT * i + i + 2 * h * i + h + DROP * h + h + LN * h
        return s * (attn + ffn)

    def inputs(h, e, v, s):  # dense lookup + positions/segments + LN + dropout (+ projection)
        f = 2 * e * v + 2 * e * (s + 2) + 2 * e + LN * e + DROP * e
        if e != h:
            f += 2 * h * e + h
        return s * f

    def mlm_output(h, e, v, s, frac=output_frac):
        f = 2 * e * v + 2 * h * e + e + ACT * e + LN * e + SOFT * v + 2 * v
        return frac * s * f

    def classifier(h, s):
        return s * (2 * h * h + h + ACT * h + 2 * h)

    c, E, V, H = config, config.embedding_size, config.vocab_size, config.hidden_size
    main = c.num_layers * block(H, c.intermediate_size, seq) + inputs(H, E, V, seq)
    if c.objective == "bert":
        return 2.0 * batch * (main + mlm_output(H, E, V, seq))
    g = generator_config(c)
    fwd = (main + g.num_layers * block(g.hidden_size, g.intermediate_size, seq) +
           inputs(g.hidden_size, E, V, seq) + mlm_output(g.hidden_size, E, V, seq))
    if c.objective in ("electra", "electra_15"):
        fwd += classifier(H, seq)
    elif c.objective == "replace_mlm":
        fwd += mlm_output(H, E, V, seq)
    else:  # all_tokens_mlm
        fwd += mlm_output(H, E, V, seq, frac=1.0) + seq * (2 * H + 1 + ACT)
    return 2.0 * batch * fwd


if __name__ == "__main__":
    # python electra.py: parameter counts and FLOPs of every preset
    print("parameters, and train FLOPs of one step at the paper's batch and sequence length")
    print(f"{'size':6} {'D params':>12} {'G params':>12} {'FLOPs/step ours':>16} {'official':>12}")
    for name in SIZES:
        cfg = get_config(name)
        model = Electra(cfg)
        batch, seq = {"tiny": (32, 128), "small": (128, 128), "base": (256, 512), "large": (2048, 512)}[name]
        print(f"{name:6} {count_params(model.discriminator):12,d} {count_params(model.generator):12,d} "
              f"{flops_per_step(cfg, batch, seq):16.3e} {flops_per_step_official(cfg, batch, seq):12.3e}")
    small = get_config("small")
    print(f"ELECTRA-Small, 1M steps at batch 128, seq 128: ours {flops_per_step(small, 128, 128) * 1e6:.2e}, "
          f"official convention {flops_per_step_official(small, 128, 128) * 1e6:.2e} (paper Table 1: 1.4e18)")
