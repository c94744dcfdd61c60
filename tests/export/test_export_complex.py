#!/usr/bin/env python3
"""Tests of tern_export's complex values (docs/export.md, *Complex values and FFTs*): torch.fft
and torch.stft lowered to DFT matrix products, complex arithmetic on interleaved pairs, and the
errors for what is not taken. Each module runs on the portable kernels and on the cpu backend
against PyTorch's own FFT (pocketfft), under either PyTorch line. Same helpers as
test_export.py.

  TERN=build/tern python3 tests/export/test_export_complex.py [name-substring...]
"""
import sys

from test_export import (_path, assert_close, expect_raises, main, nn, torch,  # noqa: E402
                         tern_export)


def _check(module, inputs, name):
    ref = module(*inputs)
    for backends in ((), ("cpu",)):
        pte = _path("%s_%s.pte" % (name, "_".join(backends) or "portable"))
        tern_export.export(module, inputs, pte, backends=backends)
        got = tern_export.run(pte, inputs)
        assert len(got) == len(ref), (len(got), len(ref))
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_close(g, r, rtol=2e-5, what="%s %s output %d" % (name, backends, i))


def test_fft_transforms():
    # FNet's mixing (the real part of a 2-D FFT), one-sided spectra, inverse transforms of
    # even and odd lengths (irfft's Hermitian weights), the three normalizations.
    class M(nn.Module):
        def forward(self, x, y):
            return (torch.fft.fftn(x, dim=(1, 2)).real,
                    torch.fft.rfft(x, dim=-1).abs(),
                    torch.fft.irfft(torch.fft.rfft(y, dim=1), n=40, dim=1),
                    torch.fft.irfft(torch.fft.rfft(y, dim=1), n=9, dim=1),
                    torch.fft.ifft(torch.fft.fft(x, dim=1), dim=1, norm="ortho").real,
                    torch.view_as_real(torch.fft.rfft2(x, norm="forward")),
                    torch.fft.fft(y, dim=0).imag)
    _check(M(), (torch.randn(2, 8, 5), torch.randn(3, 40)), "fft")


def test_stft_power_spectrogram():
    # A keyword spotter's front end inside the model: torch.stft (reflect padding, framing by
    # unfold, a Hann window, a one-sided DFT), the power spectrum and a log.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("window", torch.hann_window(64))

        def forward(self, wave):
            spec = torch.stft(wave, 64, hop_length=16, window=self.window, return_complex=True)
            return ((spec.abs().pow(2) + 1e-6).log(),)
    _check(M(), (torch.randn(2, 800),), "stft")


def test_complex_arithmetic():
    # Meta's Llama rotary embedding (pairs viewed as complex, times constant unit phases from
    # torch.polar), a complex product of two activations, conj, sums, scaling by real tensors.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            freqs = torch.outer(torch.arange(6.0), 1.0 / 10000 ** (torch.arange(0, 8, 2) / 8))
            self.register_buffer("freqs_cis", torch.polar(torch.ones_like(freqs), freqs))

        def forward(self, q, k, s):
            qc = torch.view_as_complex(q.reshape(2, 6, 4, 2))
            kc = torch.view_as_complex(k.reshape(2, 6, 4, 2))
            rotated = torch.view_as_real(qc * self.freqs_cis).flatten(2)
            mixed = qc * kc.conj() + qc - kc / 2
            scaled = torch.fft.fft(q, dim=1) * s - torch.fft.fft(k, dim=1)
            return rotated, torch.view_as_real(mixed), scaled.imag, (-mixed).real
    q, k = torch.randn(2, 6, 8), torch.randn(2, 6, 8)
    _check(M(), (q, k, torch.randn(6, 1)), "complex_arith")


def test_complex_output_and_unsupported_ops_are_errors():
    class Out(nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x)
    e = expect_raises(tern_export.ExportError, lambda: tern_export.export(
        Out(), (torch.randn(2, 8),), _path("complex_out.pte")))
    assert "output 0 is a complex tensor" in str(e) and "view_as_real" in str(e), str(e)

    class Exp(nn.Module):
        def forward(self, x):
            return torch.view_as_real(torch.exp(torch.fft.rfft(x)))
    e = expect_raises(tern_export.UnsupportedOpError, lambda: tern_export.export(
        Exp(), (torch.randn(2, 8),), _path("complex_exp.pte")))
    assert "complex values" in str(e) and "exp" in str(e), str(e)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], globals()))
