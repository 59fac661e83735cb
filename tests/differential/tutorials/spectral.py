"""Spectral methods: a derivative by rfft and irfft with fftfreq, convolution by FFT against
jnp.convolve, a 2-D power spectrum with fftshift, and the gradient through the FFT."""
import jax
import jax.numpy as jnp


def spectral_derivative(u, length):
    n = u.shape[0]
    k = 2 * jnp.pi * jnp.fft.rfftfreq(n, d=length / n)
    return jnp.fft.irfft(1j * k * jnp.fft.rfft(u), n=n)


def fft_convolve(a, b):
    n = a.shape[0] + b.shape[0] - 1
    return jnp.fft.irfft(jnp.fft.rfft(a, n) * jnp.fft.rfft(b, n), n)


def main():
    x = jnp.linspace(0, 2 * jnp.pi, 32, endpoint=False)
    u = jnp.sin(3 * x) + 0.5 * jnp.cos(x)
    du = jax.jit(spectral_derivative, static_argnums=1)(u, 2 * jnp.pi)
    a, b = jnp.arange(1.0, 7.0), jnp.array([1.0, -2.0, 0.5])
    image = jnp.outer(jnp.hanning(8), jnp.hamming(8))
    power = jnp.abs(jnp.fft.fftshift(jnp.fft.fft2(image))) ** 2
    g = jax.grad(lambda u: jnp.sum(spectral_derivative(u, 2 * jnp.pi) ** 2))(u)
    return du, fft_convolve(a, b), jnp.convolve(a, b), power, g, jnp.fft.fftfreq(6)
