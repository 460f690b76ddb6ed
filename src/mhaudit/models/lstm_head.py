"""The BiLSTM head of the BERT+LSTM hybrids: encoder token states -> BiLSTM -> pooling or attention -> logits.

* pooling (`bert-lstm`): the BiLSTM's outputs over the real (unpadded) tokens are mean- and max-pooled,
  the two concatenated, then dropout and a linear layer give the logits.
* attention (`bert-lstm-attention`): additive (Bahdanau) attention over the BiLSTM outputs,
  e_t = v^T tanh(W h_t + b), alpha = softmax(e) over the real tokens only (padding gets weight 0),
  context = sum_t alpha_t h_t, then dropout and a linear layer.

The BiLSTM runs on packed sequences, so padding never enters its state, and the pooling and attention
masks exclude it.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class LSTMHead(nn.Module):
    """BiLSTM over token states, then mean+max pooling or additive attention, then a linear layer.

    `forward(states (B, T, H), mask (B, T) bool, right-padded)` -> (logits (B, k), attention (B, T) or None).
    """

    def __init__(
        self,
        input_size: int,
        num_labels: int,
        *,
        hidden: int = 128,
        layers: int = 1,
        dropout: float = 0.1,
        attention: bool = False,
    ):
        super().__init__()
        self.lstm = nn.LSTM(
            input_size,
            hidden,
            num_layers=layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if layers > 1 else 0.0,
        )
        self.attention = attention
        width = 2 * hidden
        if attention:
            self.score_proj = nn.Linear(width, width)  # W, b
            self.score_vec = nn.Linear(width, 1, bias=False)  # v
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(width if attention else 2 * width, num_labels)

    def forward(self, states: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        mask = mask.bool()
        lengths = mask.sum(dim=1).clamp(min=1)
        packed = pack_padded_sequence(states, lengths.cpu(), batch_first=True, enforce_sorted=False)
        outputs, _ = self.lstm(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=states.shape[1])
        valid = mask.unsqueeze(-1)
        if self.attention:
            energy = self.score_vec(torch.tanh(self.score_proj(outputs))).squeeze(-1)
            weights = torch.softmax(energy.masked_fill(~mask, float("-inf")), dim=1)
            pooled = torch.bmm(weights.unsqueeze(1), outputs).squeeze(1)
        else:
            weights = None
            mean = (outputs * valid).sum(dim=1) / lengths.unsqueeze(-1).to(outputs.dtype)
            top = outputs.masked_fill(~valid, float("-inf")).max(dim=1).values
            pooled = torch.cat([mean, top], dim=-1)
        return self.out(self.dropout(pooled)), weights
