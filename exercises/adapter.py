"""The capstone's adapter: which of your exercises take the place of which part of the project.
A table and nothing else; exercises/capstone.py plugs each row in for the run and takes it out
after.

Each row: (project module, the name there, the name in your file). A method replaces the
project class's method, so every Generator, Discriminator and Encoder the project builds runs
your code with the project's parameters; a function replaces the project module's function, so
everything that calls it (Electra.forward, the tokenizer, the held-out evaluation) calls yours.
"""
import electra
import tokenizer

PLUGS = [
    # Part 1: the encoder
    (electra, "attention_reference", "attention_reference"),
    (electra, "SelfAttention.forward", "SelfAttention.forward"),
    (electra, "Block.forward", "Block.forward"),
    (electra, "Embeddings.forward", "Embeddings.forward"),
    (electra, "Encoder.hidden_states", "Encoder.hidden_states"),
    # Part 2: Section 2, masking to the loss
    (electra, "mask_positions", "mask_positions"),
    (electra, "mask_tokens", "mask_tokens"),
    (electra, "Generator.logits", "Generator.logits"),
    (electra, "sample", "sample"),
    (electra, "corrupt", "corrupt"),
    (electra, "mlm_loss", "mlm_loss"),
    (electra, "disc_loss", "disc_loss"),
    (electra, "Electra.forward", "Electra.forward"),
    # Part 3: the tokenizer that reads the text
    (tokenizer, "basic_tokenize", "basic_tokenize"),
    (tokenizer, "wordpiece", "wordpiece"),
]

# The draws that the same-noise run replays from the answer key, in place of yours: the random
# steps of Section 2
REPLAYED = ("mask_positions", "mask_tokens", "sample")
