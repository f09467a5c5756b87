"""Part 2's checks of exercises 10-13 reject named wrong versions
(exercises/check_section2_losses.py)."""
import pytest
import torch
import torch.nn.functional as F
from test_exercises import rejects, solution

import electra
from electra import corrupt, disc_loss, mask_positions, mask_tokens, mlm_loss, sample
from exercises import check_section2_losses as part

# -----------------------------------------------------------------------------
# Exercise 10: corrupt


def _corrupt_with(labels_from_positions=False, all_slots=False, in_place=False):
    def corrupt(x, m, m_valid, x_hat):
        used = m_valid | all_slots
        values = torch.where(used, x_hat, x.gather(1, m))
        x_corrupt = x.scatter_(1, m, values) if in_place else x.scatter(1, m, values)
        if labels_from_positions:  # original = not a masked position, whatever was sampled
            is_original = torch.ones_like(x, dtype=torch.bool)
            is_original = is_original.scatter(1, m, ~used)
        else:  # in place, x_corrupt is x: every label comes out True
            is_original = x_corrupt == x
        return x_corrupt, is_original

    return corrupt


# -----------------------------------------------------------------------------
# Exercise 11: mlm_loss


def _nll(logits, targets):
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(),
                           reduction="none").view(targets.shape)


def _mlm_row_means(logits, targets, m_valid):
    w = m_valid.float()
    return ((_nll(logits, targets) * w).sum(1) / w.sum(1)).mean()


def _mlm_log_softmax_rounded(logits, targets, m_valid):
    p = torch.softmax(logits.float(), dim=-1).gather(-1, targets[..., None]).squeeze(-1)
    w = m_valid.float()
    return (-torch.log(p) * w).sum() / w.sum()


# -----------------------------------------------------------------------------
# Exercise 12: disc_loss


def _bce(logits, is_original):
    return F.binary_cross_entropy_with_logits(logits.float(), is_original.float(), reduction="none")


# -----------------------------------------------------------------------------
# Exercise 13: Electra.forward, wrong in one way each. Its names (mask_positions, ..., disc_loss)
# are this module's globals, as a student's are their file's: the check replays its draws here.


def _electra_with(lam=True, straight_through=False, soft_labels=False,
                  labels_from_positions=False, targets_masked=False, d_on_masked=False,
                  g_no_grad=False, ignore_temperature=False):
    class Electra(electra.Electra):
        def forward(self, input_ids, segment_ids, attention_mask, rng=None, temperature=None):
            cfg, x = self.config, input_ids
            m, m_valid = mask_positions(x, attention_mask, cfg, rng)
            x_masked = mask_tokens(x, m, m_valid, cfg, rng)
            with torch.set_grad_enabled(not g_no_grad):
                logits_G = self.generator(x_masked, segment_ids, attention_mask, m)
            t = cfg.temperature if temperature is None or ignore_temperature else temperature
            x_hat = sample(logits_G, t, rng)
            x_m = x.gather(1, m)
            x_corrupt, is_original = corrupt(x, m, m_valid, x_hat)
            logits_D = self.discriminator(x_masked if d_on_masked else x_corrupt, segment_ids,
                                          attention_mask)
            if straight_through:  # D's logits carry p_G(x_hat) - p_G(x_hat).detach(): value 0
                p = logits_G.softmax(-1).gather(-1, x_hat[..., None]).squeeze(-1) * m_valid
                logits_D = logits_D + torch.zeros_like(logits_D).scatter(1, m, p - p.detach())
            if labels_from_positions:
                is_original = torch.ones_like(is_original).scatter(1, m, ~m_valid)
            if soft_labels:  # at masked positions the label is p_G(x_t), with G's graph
                p = logits_G.softmax(-1).gather(-1, x_m[..., None]).squeeze(-1)
                is_original = is_original.float().scatter(1, m, torch.where(
                    m_valid, p, torch.ones_like(p)))
            l_mlm = mlm_loss(logits_G, x_masked.gather(1, m) if targets_masked else x_m, m_valid)
            l_disc = disc_loss(logits_D, is_original, attention_mask)
            loss = l_mlm + (cfg.lam if lam else 1.0) * l_disc
            return electra.ElectraOutput(loss=loss, mlm_loss=l_mlm, disc_loss=l_disc, m=m,
                                         m_valid=m_valid, x_masked=x_masked, logits_G=logits_G,
                                         x_corrupt=x_corrupt, logits_D=logits_D)

    return Electra


class _CallsTheProject(electra.Electra):
    """Runs electra's own steps (the project's forward, which looks up electra.mask_positions,
    ...), not this file's: its draws are its own."""

    def forward(self, input_ids, segment_ids, attention_mask, rng=None, temperature=None):
        return electra.Electra.forward(self, input_ids, segment_ids, attention_mask, rng,
                                       temperature)


WRONG = {
    "corrupt: labels from positions (a sample equal to the original is 'replaced')": (
        part.check_corrupt, solution(corrupt=_corrupt_with(labels_from_positions=True))),
    "corrupt: replaces the unused slots too": (
        part.check_corrupt, solution(corrupt=_corrupt_with(all_slots=True))),
    "corrupt: writes into x in place": (
        part.check_corrupt, solution(corrupt=_corrupt_with(in_place=True))),
    "mlm_loss: mean including the unused slots": (
        part.check_mlm_loss,
        solution(mlm_loss=lambda lg, t, v: _nll(lg, t).mean())),
    "mlm_loss: sum, not mean": (
        part.check_mlm_loss,
        solution(mlm_loss=lambda lg, t, v: (_nll(lg, t) * v).sum())),
    "mlm_loss: mean of per-row means": (part.check_mlm_loss, solution(mlm_loss=_mlm_row_means)),
    "mlm_loss: log of a rounded softmax": (
        part.check_mlm_loss, solution(mlm_loss=_mlm_log_softmax_rounded)),
    "disc_loss: averages over padding too": (
        part.check_disc_loss, solution(disc_loss=lambda lg, o, w: _bce(lg, o).mean())),
    "disc_loss: D scores replaced": (
        part.check_disc_loss,
        solution(disc_loss=lambda lg, o, w: (_bce(lg, ~o) * w).sum() / w.sum())),
    "disc_loss: mean per row, then over rows": (
        part.check_disc_loss,
        solution(disc_loss=lambda lg, o, w: ((_bce(lg, o) * w).sum(1) / w.sum(1)).mean())),
    "disc_loss: log of a rounded sigmoid": (
        part.check_disc_loss,
        solution(disc_loss=lambda lg, o, w: ((-(o * torch.log(torch.sigmoid(lg))
                                                + (~o) * torch.log(1 - torch.sigmoid(lg))))
                                             * w).sum() / w.sum())),
    "disc_loss: sum, not mean": (
        part.check_disc_loss, solution(disc_loss=lambda lg, o, w: (_bce(lg, o) * w).sum())),
    "Electra.forward: lambda not applied (L_MLM + L_Disc)": (
        part.check_electra_forward, solution(Electra=_electra_with(lam=False))),
    "Electra.forward: straight-through sample, L_Disc reaches G": (
        part.check_electra_forward, solution(Electra=_electra_with(straight_through=True))),
    "Electra.forward: soft labels p_G(x_t), L_Disc reaches G": (
        part.check_electra_forward, solution(Electra=_electra_with(soft_labels=True))),
    "Electra.forward: labels from positions instead of equality": (
        part.check_electra_forward, solution(Electra=_electra_with(labels_from_positions=True))),
    "Electra.forward: MLM targets from x_masked": (
        part.check_electra_forward, solution(Electra=_electra_with(targets_masked=True))),
    "Electra.forward: D scores x_masked": (
        part.check_electra_forward, solution(Electra=_electra_with(d_on_masked=True))),
    "Electra.forward: G under no_grad (L_MLM trains nothing)": (
        part.check_electra_forward, solution(Electra=_electra_with(g_no_grad=True))),
    "Electra.forward: ignores the temperature argument": (
        part.check_electra_forward, solution(Electra=_electra_with(ignore_temperature=True))),
    "Electra.forward: calls electra's steps, not the file's own": (
        part.check_electra_forward, solution(Electra=_CallsTheProject)),
}


@pytest.mark.parametrize("name", WRONG)
def test_check_rejects(name):
    check, student = WRONG[name]
    rejects(check, student)


def test_a_correct_forward_of_its_own_passes():
    """The wrong versions' forward with nothing wrong passes: what they fail on is their mistake,
    not the way they are written."""
    part.check_electra_forward(solution(Electra=_electra_with()))
