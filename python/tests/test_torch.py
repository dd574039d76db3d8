# SPDX-License-Identifier: Apache-2.0
"""fa_cl.torch (PyTorch autograd through fa_cl's forward and backward), skipped where torch is absent:
torch.autograd.gradcheck in float64 (fa_cl computes in float32: the tolerances below are float32's),
the gradients against PyTorch's own (SDPA, or the same math in PyTorch ops for fa_cl's modifiers) in
float32, and a small model trained with fa_cl's attention against the same model on SDPA."""
import math

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from fa_cl.torch import flash_attn_func  # noqa: E402  (after the skip: needs torch)

torch.set_num_threads(2)

# The float32 bar of tests/tolerance.h for gradients, as a tensor: |got - ref| <= ABS * max(1, max|ref|)
# + REL * |ref| (dS = P (dP - D) cancels: small entries carry the rounding of large terms). PyTorch's
# float32 computation has its own rounding of the same order, so the bar is tolerance.h's times 4.
ABS, REL = 4e-5, 4e-4


def assert_close(got, ref, what):
    m = max(1.0, ref.abs().max().item())
    err = (got - ref).abs()
    bad = err > ABS * m + REL * ref.abs()
    assert not bad.any(), "%s: max error %.3e (max |ref| %.3e)" % (what, err.max().item(), m)


def sdpa(q, k, v, causal=False, attn_mask=None):
    """PyTorch's attention on fa_cl's [B, S, H, D] layout (GQA by repeating k and v per group)."""
    g = q.shape[2] // k.shape[2]
    k, v = (x.repeat_interleave(g, dim=2) for x in (k, v))
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal,
                                       attn_mask=attn_mask)
    return o.transpose(1, 2)


def math_attention(q, k, v, causal=False, softcap=0.0, alibi_slopes=None, sinks=None, attn_mask=None):
    """include/fa_cl.h "Score modifiers" in PyTorch ops: softcap, ALiBi, the mask, then the softmax with
    the sink in its denominator; bottom-right causal."""
    b, sq, hq, d = q.shape
    sk, g = k.shape[1], hq // k.shape[2]
    k, v = (x.repeat_interleave(g, dim=2) for x in (k, v))
    s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(d)
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i = torch.arange(sq).view(-1, 1)
    j = torch.arange(sk).view(1, -1)
    if alibi_slopes is not None:
        s = s - alibi_slopes.view(1, -1, 1, 1) * (i + sk - sq - j).abs().to(s.dtype)
    if attn_mask is not None:
        s = s + attn_mask if attn_mask.dtype != torch.bool else s.masked_fill(~attn_mask, -math.inf)
    if causal:
        s = s.masked_fill(j > i + sk - sq, -math.inf)
    if sinks is not None:
        s = torch.cat([s, sinks.view(1, -1, 1, 1).expand(b, hq, sq, 1)], dim=-1)
    p = torch.softmax(s, dim=-1)[..., :sk]
    return torch.einsum("bhij,bjhd->bihd", p, v)


def leaves(*shapes, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=gen, dtype=dtype).requires_grad_() for s in shapes]


def grads(fn, inputs, dout):
    for x in inputs:
        x.grad = None
    fn(*inputs).backward(dout)
    return [x.grad.clone() for x in inputs]


@pytest.mark.parametrize("causal,hkv", [(False, 2), (True, 1)])
def test_gradcheck_float64(causal, hkv):
    # fa_cl computes in float32: a step of 1e-3 keeps float32's rounding of o (~6e-8 |o|) below 1e-4 of
    # each difference, the truncation error at ~1e-6; a wrong gradient moves entries by far more
    q, k, v = leaves((1, 5, 2, 4), (1, 7, hkv, 4), (1, 7, hkv, 4), dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda a, b, c: flash_attn_func(a, b, c, causal=causal), (q, k, v), eps=1e-3,
                                    atol=2e-4, rtol=2e-3)


def test_gradcheck_float64_sinks_softcap():
    q, k, v = leaves((1, 4, 2, 4), (1, 6, 2, 4), (1, 6, 2, 4), dtype=torch.float64, seed=1)
    sinks = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, c, s: flash_attn_func(a, b, c, softcap=2.0, sinks=s),
                                    (q, k, v, sinks), eps=1e-3, atol=2e-4, rtol=2e-3)


@pytest.mark.parametrize("causal,sq,sk,hq,hkv", [(False, 37, 53, 2, 2), (True, 64, 64, 4, 2), (True, 40, 20, 3, 1)])
def test_against_sdpa_float32(causal, sq, sk, hq, hkv):
    if causal and sq != sk:  # PyTorch's causal is top-left; fa_cl's bottom-right: the math version
        ref = lambda a, b, c: math_attention(a, b, c, causal=True)  # noqa: E731
    else:
        ref = lambda a, b, c: sdpa(a, b, c, causal=causal)  # noqa: E731
    x = leaves((2, sq, hq, 32), (2, sk, hkv, 32), (2, sk, hkv, 32), seed=2)
    dout = torch.randn(2, sq, hq, 32, generator=torch.Generator().manual_seed(3))
    got = grads(lambda a, b, c: flash_attn_func(a, b, c, causal=causal), x, dout)
    want = grads(ref, x, dout)
    for name, g, w in zip(("dq", "dk", "dv"), got, want):
        assert_close(g, w, name)


def test_masks_against_sdpa_float32():
    x = leaves((2, 24, 2, 16), (2, 40, 2, 16), (2, 40, 2, 16), seed=4)
    dout = torch.randn(2, 24, 2, 16, generator=torch.Generator().manual_seed(5))
    gen = torch.Generator().manual_seed(6)
    boolean = torch.rand(2, 1, 24, 40, generator=gen) > 0.3  # broadcast over heads
    additive = torch.randn(1, 2, 24, 40, generator=gen)       # broadcast over batches
    for mask in (boolean, additive):
        got = grads(lambda a, b, c: flash_attn_func(a, b, c, attn_mask=mask), x, dout)
        want = grads(lambda a, b, c: sdpa(a, b, c, attn_mask=mask), x, dout)
        for name, g, w in zip(("dq", "dk", "dv"), got, want):
            assert_close(g, w, "%s mask %s" % (mask.dtype, name))


def test_modifiers_against_torch_float32():
    q, k, v = leaves((2, 30, 4, 16), (2, 30, 2, 16), (2, 30, 2, 16), seed=7)
    sinks = torch.tensor([0.3, -0.5, 1.0, 2.0], requires_grad=True)
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625])
    dout = torch.randn(2, 30, 4, 16, generator=torch.Generator().manual_seed(8))
    mods = dict(causal=True, softcap=3.0, alibi_slopes=slopes)
    got = grads(lambda a, b, c, s: flash_attn_func(a, b, c, sinks=s, **mods), [q, k, v, sinks], dout)
    want = grads(lambda a, b, c, s: math_attention(a, b, c, sinks=s, **mods), [q, k, v, sinks], dout)
    for name, g, w in zip(("dq", "dk", "dv", "dsink"), got, want):
        assert_close(g, w, name)
    assert want[3].abs().max() > 1e-3  # the sinks' gradient is not trivially 0 here


class _Block(torch.nn.Module):
    def __init__(self, dm, heads):
        super().__init__()
        self.heads = heads
        self.ln, self.ln2 = torch.nn.LayerNorm(dm), torch.nn.LayerNorm(dm)
        self.qkv, self.o = torch.nn.Linear(dm, 3 * dm), torch.nn.Linear(dm, dm)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dm, 2 * dm), torch.nn.GELU(), torch.nn.Linear(2 * dm, dm))

    def forward(self, x, attn):
        b, s, dm = x.shape
        q, k, v = self.qkv(self.ln(x)).view(b, s, 3, self.heads, dm // self.heads).unbind(2)
        x = x + self.o(attn(q, k, v).reshape(b, s, dm))
        return x + self.mlp(self.ln2(x))


class _Model(torch.nn.Module):
    """Two attention layers over token embeddings: predict each position's previous token."""

    def __init__(self, vocab=16, dm=32, heads=2, layers=2):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dm)
        self.pos = torch.nn.Parameter(0.1 * torch.randn(64, dm))
        self.blocks = torch.nn.ModuleList(_Block(dm, heads) for _ in range(layers))
        self.head = torch.nn.Linear(dm, vocab)

    def forward(self, tokens, attn):
        x = self.emb(tokens) + self.pos[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x, attn)
        return self.head(x)


def _train(attn, steps=100):
    torch.manual_seed(0)
    model = _Model()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        t = torch.randint(0, 16, (4, 16), generator=gen)
        loss = F.cross_entropy(model(t, attn)[:, 1:].reshape(-1, 16), t[:, :-1].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_training_matches_sdpa():
    # the same model, data and initialisation, causal self-attention by fa_cl and by PyTorch's SDPA:
    # the loss curves agree within float32 noise at every step (measured: 5e-7 over 150 steps of a larger
    # batch), and training works (2.9 -> 1.8 here)
    fa = _train(lambda q, k, v: flash_attn_func(q, k, v, causal=True))
    ref = _train(lambda q, k, v: sdpa(q, k, v, causal=True))
    worst = max(abs(a - b) / max(1.0, b) for a, b in zip(fa, ref))
    assert worst <= 1e-4, "loss curves differ by %.3e (relative)" % worst
    assert fa[-1] < 0.75 * fa[0], "the loss did not fall: %.3f -> %.3f" % (fa[0], fa[-1])


def test_refusals():
    q = torch.randn(1, 4, 1, 8)
    with pytest.raises(TypeError):
        flash_attn_func(q.to(torch.int32), q, q)
    with pytest.raises(TypeError):
        flash_attn_func(q, q.double(), q)
