"""A small forward+backward script on spyre; the stability check runs it in fresh interpreters
(``python -m torch_spyre_ref.stability``) and expects a clean exit every time."""

from __future__ import annotations

import torch

import torch_spyre_ref  # noqa: F401


def main() -> int:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 4)
    ).to("spyre")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randn(16, 32, device="spyre")
    target = torch.randint(0, 4, (16,), device="spyre")
    for _ in range(3):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
