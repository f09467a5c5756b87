"""Electric: ELECTRA's discriminator as an energy-based cloze model, trained by noise-contrastive
estimation, in plain PyTorch.

Clark, Luong, Le, Manning (2020). "Pre-Training Transformers as Energy-Based Cloze Models."
EMNLP 2020, arXiv:2012.08561. The official code is google-research/electra's run_pretraining.py
with electric_objective (a two-tower generator); the paper's equations are cited as (paper).

The model (paper): for each position t, an energy E(x)_t with

    p_theta(x_t | x_\\t) = exp(-E(x)_t) / Z(x_\\t)

a low energy meaning a likely token. Z is never computed: noise-contrastive estimation (NCE)
trains E to tell data from samples of a noise distribution q whose probabilities are known, and
the NCE optimum is self-normalised. One pre-training step, in the order Electric.forward
runs it, each line one function here or in electra.py:

    c        = candidates(x)                         real tokens, not [CLS], [SEP], [MASK]
    q        = TwoTowerCloze(x)                      q(x_t | x_\\t) at every t: two one-sided towers
    L_cloze  = -log q(x_t | x_\\t), t in c           cloze_loss()
    m        = mask_positions(x)                     the k ~ p * n positions that get noise
    x_hat    ~ q(. | x_\\t), t in m                   sample(), no gradient
    x_noised = REPLACE(x, m, x_hat)                  electra.corrupt()
    E        = energy(x_noised)                      the energy network, electra.Discriminator
    log q_t  = log q(x_noised_t | x_\\t)              noise_log_prob(), no gradient
    s_t      = -(E + log q_t + log(p / (1 - p)))     nce_logits(): logit that t is data
    is_data  = 1(t not in m)                         is_data(): a sample is noise, even if equal
    L_NCE    = BCE(s, is_data)                       nce_loss(), every real token
    L        = L_cloze + lam * L_NCE                 electra.electra_loss()

and, after training, a sentence's score in one forward pass: sentence_score() = sum_t -E(x)_t.

Sign convention: as electra.py, the logit that the loss and the metrics read (ElectraOutput's
logits_D) is that of *original* (data). The energy network's head outputs E(x)_t itself: the
official code's discriminator head predicts *noise*, and in its electric objective that head's
output is the energy, to which it adds log q and log(p / (1 - p)) to get the logit of noise. Ours
is minus that: s_t = -(E(x)_t + log q_t + log(p / (1 - p))).

Fine-tuning starts from the energy network's encoder (Electric.fine_tuning_encoder), as ELECTRA's
starts from D's.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from electra import (
    Discriminator,
    Electra,
    ElectraConfig,
    ElectraOutput,
    Embeddings,
    Encoder,
    candidates,
    check_config,
    corrupt,
    disc_loss,
    electra_loss,
    encoder_of,
    generator_config,
    init_weights,
    mask_positions,
    sample,
)

# -----------------------------------------------------------------------------
# The noise model q(x_t | x_\t): a two-tower cloze model (official TwoTowerClozeTransformer)


def one_sided_keep(attention_mask, left: bool):
    """Which keys each query may attend to, [B, 1, T, T] bool: the real tokens at or before the
    query (left: the left-to-right tower) or at or after it (the right-to-left tower), as the
    official modeling.py's ltr / rtl causal masks.

    Each query may also attend to itself even where it is padding: the right-to-left tower's
    padding queries have no real key at or after them, and a row of all-False keys would give
    F.scaled_dot_product_attention NaNs, which reach every row at the next layer (0 * NaN). The
    official code adds -10000 to a masked key's score instead; in such a row every key gets the
    same -10000, which the softmax cancels, so the row attends to every key as if nothing were
    masked. Either way nothing real reads a padding row.

    >>> one_sided_keep(torch.tensor([[1, 1, 0]]), left=False)[0, 0].int()
    tensor([[1, 1, 0],
            [0, 1, 0],
            [0, 0, 1]], dtype=torch.int32)
    """
    T = attention_mask.shape[1]
    ones = torch.ones(T, T, dtype=torch.bool, device=attention_mask.device)
    side = ones.tril() if left else ones.triu()  # [T, T]: query i, key j <= i (or j >= i)
    keep = attention_mask.bool()[:, None, None, :] & side  # [B, 1, T, T]
    return keep | torch.eye(T, dtype=torch.bool, device=attention_mask.device)


class TwoTowerCloze(nn.Module):
    """The noise distribution q (Electric's generator): two Transformers over the *unmasked*
    input, one attending left-to-right, one right-to-left, each the size of ELECTRA's generator
    (electra.generator_config) and sharing the embeddings.

        h_t = [ h_ltr(x)_{t-1} ; h_rtl(x)_{t+1} ]                       (the states beside t)
        q(x_t | x_\\t) = softmax_v( e(v)^T LN(GELU(W h_t)) + b_v )      (G's head, tied output)

    h_ltr(x)_{t-1} has seen x_1 .. x_{t-1} and h_rtl(x)_{t+1} has seen x_{t+1} .. x_n, so q at t
    never sees x_t: one forward pass gives a cloze distribution at every position, with no
    [MASK]. The shift is the official roll, which wraps around: the first position gets the left
    tower's last state and the last position the right tower's first, both of which have seen the
    whole row. Those positions are [CLS] and [SEP] or padding, which the cloze loss never counts
    and noise never replaces: L_NCE reads log q there too, but always labels them data.
    """

    def __init__(self, config: ElectraConfig, embeddings: Embeddings):
        super().__init__()
        self.ltr = Encoder(config, embeddings)  # each tower projects the shared embeddings
        self.rtl = Encoder(config, embeddings)
        self.embeddings = embeddings
        self.head = nn.Linear(2 * config.hidden_size, config.embedding_size)
        self.head_ln = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def hidden_states(self, input_ids, segment_ids, attention_mask):
        """[B, T] ids, segments, mask -> h [B, T, 2 Hg]: the two towers' states beside each t."""
        h_ltr = self.ltr.hidden_states(input_ids, segment_ids, attention_mask,
                                       keep=one_sided_keep(attention_mask, left=True))
        h_rtl = self.rtl.hidden_states(input_ids, segment_ids, attention_mask,
                                       keep=one_sided_keep(attention_mask, left=False))
        # torch's roll(1) moves every state one place right: position t reads ltr at t-1 and rtl
        # at t+1, the shift the official code makes with its own roll helper
        return torch.cat([h_ltr.roll(1, dims=1), h_rtl.roll(-1, dims=1)], dim=-1)

    def forward(self, input_ids, segment_ids, attention_mask):
        """The cloze logits at every position: [B, T, V], log q(. | x_\\t) up to a constant."""
        h = self.hidden_states(input_ids, segment_ids, attention_mask)  # [B, T, 2 Hg]
        z = self.head_ln(F.gelu(self.head(h)))  # [B, T, E]
        return z @ self.embeddings.word.weight.T + self.output_bias  # [B, T, V]


# -----------------------------------------------------------------------------
# The quantities of one step, one function each


def cloze_loss(logits_q, x, weights):
    """L_cloze = E[ sum_{t in c} -log q(x_t | x_\\t) ]                 (official _get_cloze_outputs)

    The noise model's own training loss: the cloze softmax cross-entropy at every candidate t
    (electra.candidates: real tokens that are not [CLS], [SEP] or [MASK]), not only at the masked
    positions, averaged over them as the official get_softmax_output does.
    logits_q: [B, T, V]; x: [B, T]; weights: [B, T] (the candidates).

    Example: uniform logits over V = 4 tokens give log 4 = 1.3863 at every position.
    """
    nll = F.cross_entropy(logits_q.float().flatten(0, 1), x.flatten(), reduction="none")  # [B*T]
    w = weights.flatten().float()
    return (nll * w).sum() / w.sum().clamp_min(1.0)


@torch.no_grad()
def noise_log_prob(logits_q, x_noised, temperature: float = 1.0):
    """log q(x_noised_t | x_\\t) at every t: [B, T], no gradient                  (paper)

    The noise distribution's log-probability of the token each position now holds, the cloze
    model read on the clean input x at the noised sequence's tokens, as the official
    _get_discriminator_output (log_softmax(cloze logits) at inputs.input_ids, stop_gradient).
    q is the distribution the noise was drawn from: at a sampling temperature tau,
    softmax(logits / tau). The official code samples at its temperature but always reads
    log_softmax(logits), which is the noise's density only at its default tau = 1; we read the
    density actually sampled from (the same at tau = 1).
    logits_q: [B, T, V]; x_noised: [B, T].

    Example: logits [0, log 3] (q = 1/4, 3/4) at a token 1: log 3/4 = -0.2877.
    """
    z = logits_q.float() / temperature  # [B, T, V]
    # log softmax(z) at the token, without writing out the whole [B, T, V] log-softmax
    return z.gather(-1, x_noised[..., None]).squeeze(-1) - z.logsumexp(-1)  # [B, T]


def energy(model: "Electric", x, segment_ids, attention_mask):
    """E(x)_t = w^T GELU(W h(x)_t + b_W) + b: [B, T] one scalar per token, low = likely  (paper)

    The paper writes E(x)_t = w^T h(x)_t over the Transformer's states h; the extra dense layer
    and GELU are ELECTRA's discriminator head, which the official code reuses (electra.py's
    Discriminator). Its output is E itself, as the official head's (see the module docstring).
    """
    return model.discriminator(x, segment_ids, attention_mask)


def nce_logits(energies, log_q, noise_rate: float):
    """s_t = log[(1 - p) exp(-E(x)_t)] - log[p q(x_t | x_\\t)]
           = -(E(x)_t + log q(x_t | x_\\t) + log(p / (1 - p)))             (paper, NCE posterior)

    The logit that token t is data rather than noise, when a share p of the positions hold noise
    drawn from q and the rest data from p_theta = exp(-E): P(data | x_t) = sigmoid(s_t). The paper
    writes the prior ratio (1 - p) / p as (n - k) / k for k noised of n; the official code uses
    the constant log(mask_prob / (1 - mask_prob)), which is what this is, p = config.mask_prob.
    energies, log_q: [B, T] -> [B, T].

    Example: E = 1, q = 1/2, p = 1/2: s = -(1 + log 1/2 + 0) = -0.3069.
    """
    return -(energies.float() + log_q.float() + math.log(noise_rate / (1 - noise_rate)))


def is_data(x, m, m_valid):
    """is_data_t = 1(t not in m): [B, T] bool, False at every position that got a sample.

    Unlike ELECTRA's labels (x_corrupt_t == x_t), a sample equal to the original is noise all the
    same: NCE labels a token by where it was drawn from, not by what it is (official
    _get_fake_data: labels = masked under electric_objective).

    >>> is_data(torch.zeros(1, 4, dtype=torch.long), torch.tensor([[2, 0]]),
    ...         torch.tensor([[True, False]]))
    tensor([[ True,  True, False,  True]])
    """
    noised = torch.zeros_like(x, dtype=torch.bool).scatter(1, m, m_valid)  # [B, T]
    return ~noised


def nce_loss(logits, is_data, attention_mask):
    """L_NCE = E[ sum_{t not in m} -log sigmoid(s_t) + sum_{t in m} -log(1 - sigmoid(s_t)) ]
                                                                              (paper, NCE loss)

    The binary cross-entropy of data against noise over every real token ([CLS] and [SEP]
    included, as the official code weights by input_mask), averaged over them: electra.disc_loss
    with the NCE logits and labels. logits: [B, T]; is_data: [B, T] bool; attention_mask: [B, T].
    """
    return disc_loss(logits, is_data, attention_mask)


def sentence_score(energies, tokens):
    """score(x) = sum_t -E(x)_t = sum_t log p_theta(x_t | x_\\t) + sum_t log Z(x_\\t)  (paper)

    Electric's score of a whole sentence from one forward pass (the paper re-ranks with it), where
    a masked LM's pseudo-log-likelihood needs one pass per token. NCE makes the model roughly
    self-normalised (Z near 1), so the sum approximates the pseudo-log-likelihood.
    energies: [B, T]; tokens: [B, T] bool, the tokens counted -> [B] float64.

    >>> sentence_score(torch.tensor([[5.0, 1.0, -2.0, 5.0]]), torch.tensor([[0, 1, 1, 0]]).bool())
    tensor([1.], dtype=torch.float64)
    """
    return torch.where(tokens, -energies.double(), 0.0).sum(1)


# -----------------------------------------------------------------------------
# The whole model


@dataclass
class ElectricOutput(ElectraOutput):
    """ElectraOutput with Electric's names: mlm_loss is L_cloze, disc_loss L_NCE, logits_D the NCE
    logits of data s_t (so report.step_stats' D metrics read them), logits_G q's logits at the
    noised positions, x_masked the clean x (Electric masks nothing), x_corrupt the noised x."""
    energies: torch.Tensor | None = None  # [B, T] E(x_noised)_t
    is_data: torch.Tensor | None = None  # [B, T] L_NCE's labels (is_data): False where sampled

    def is_original(self, x: torch.Tensor) -> torch.Tensor:
        """L_NCE's labels, not x_noised == x: every sampled position is noise, even where the
        sample equals x_t. Such a position holds the data token, so its logit is the one that token
        would get as data: no D can tell them apart, and D's accuracy, recall and AUC against
        these labels stay below 1, by about the share of such samples (the metrics' floor)."""
        return self.is_data


class Electric(nn.Module):
    """The two-tower noise model q (`generator`) and the energy network (`discriminator`: the
    official code builds it as ELECTRA's), sharing the embeddings, trained together by
    L_cloze + lam * L_NCE. config.objective is "electric"; the sizes are ELECTRA's: the energy
    network D's, each tower G's (electra.generator_config)."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        check_config(config)
        if config.objective != "electric":
            raise ValueError(f"Electric needs objective 'electric', not {config.objective!r}")
        self.config = config
        self.embeddings = Embeddings(config)
        self.generator = TwoTowerCloze(generator_config(config), self.embeddings)
        self.discriminator = Discriminator(config, self.embeddings)
        init_weights(self, config.init_std)

    def forward(self, input_ids, segment_ids, attention_mask,
                rng: torch.Generator | None = None,
                temperature: float | None = None) -> ElectricOutput:
        """One pre-training step, the module docstring's lines in order. temperature: q's
        sampling temperature (None: config.temperature), as Electra.forward's.

        E and log q are read on x_noised at every position in one pass, as the official code
        does: the context x_\\t of a position then holds the other positions' noise too, which
        the exact NCE loss would avoid with a pass per noised position."""
        cfg = self.config
        tau = cfg.temperature if temperature is None else temperature
        x = input_ids
        c = candidates(x, attention_mask, cfg)  # [B, T]
        logits_q = self.generator(x, segment_ids, attention_mask)  # [B, T, V]
        l_cloze = cloze_loss(logits_q, x, c)
        m, m_valid = mask_positions(x, attention_mask, cfg, rng)  # [B, K]
        logits_q_m = logits_q.gather(1, m[..., None].expand(-1, -1, logits_q.shape[-1]))
        x_hat = sample(logits_q_m, tau, rng)  # [B, K]
        x_noised, _ = corrupt(x, m, m_valid, x_hat)  # [B, T]; NCE's labels are is_data's
        energies = energy(self, x_noised, segment_ids, attention_mask)  # [B, T]
        log_q = noise_log_prob(logits_q, x_noised, tau)  # [B, T], no gradient
        logits = nce_logits(energies, log_q, cfg.mask_prob)  # [B, T]
        labels = is_data(x, m, m_valid)  # [B, T]
        l_nce = nce_loss(logits, labels, attention_mask)
        return ElectricOutput(loss=electra_loss(l_cloze, l_nce, cfg.lam), mlm_loss=l_cloze,
                              disc_loss=l_nce, m=m, m_valid=m_valid, x_masked=x,
                              logits_G=logits_q_m, x_corrupt=x_noised, logits_D=logits,
                              energies=energies, is_data=labels)

    @torch.no_grad()
    def clean_energies(self, input_ids, segment_ids, attention_mask):
        """E(x)_t of every token of clean text, nothing noised: [B, T] (float32). What
        sentence_score reads; ElectricOutput.energies are those of x_noised, during training."""
        return energy(self, input_ids, segment_ids, attention_mask).float()

    def fine_tuning_encoder(self) -> Encoder:
        """The energy network's encoder, without its head: what fine-tuning starts from."""
        return encoder_of(self.discriminator, self.config)


def pretraining_model(config: ElectraConfig) -> nn.Module:
    """The model of config.objective, freshly initialised: Electric for "electric", electra.py's
    Electra for the others (ELECTRA, BERT, the Sec. 3.5 ablations). What a checkpoint's
    model_config is rebuilt with."""
    return Electric(config) if config.objective == "electric" else Electra(config)
