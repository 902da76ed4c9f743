"""Kronecker-structured linear algebra in the eigenbases of two factors, decomposed once.

A matrix equation whose unknown F (n × m) is acted on from the left by A (n × n) and from the right
by B (m × m) — the Kronecker sum A ⊕ B (``A F + F B``, the covariance of PMA, dissertation eq. 5.12),
the Kronecker product A ⊗ B (``A F B``, intrinsic LMC), a Sylvester equation ``A F + F B = C``
(PMA-MAP's eq. 5.22), a Stein equation ``F − A F B = C`` (PCSA's eq. 6, BMR's joint mean update) —
is elementwise in the factors' eigenbases. With A = V_A diag(a) V_A⁻¹ and B = V_B diag(b) V_B⁻¹ the
rotation Ĉ = V_A⁻¹ C V_B turns every such operator into a Hadamard product with φ(a_i, b_j):

    F = V_A (Φ ⊙ V_A⁻¹ C V_B) V_B⁻¹,   Φ_ij = φ(a_i, b_j).

`KroneckerEigenbasis` holds the two decompositions (each an `Eigenbasis`, computed once, O(n³ + m³))
and provides the solves, mat-vecs, preconditioning, diagonals and exact Gaussian sampling as
methods, each O(n²m + nm²) (four n × m rotations, or fewer where stated). Conventions:

* F is (n, m); vec is column-major, so (A ⊕ B) vec F = vec(A F + F Bᵀ) and the Kronecker sum's
  eigenvalues are a_i + b_j. All factors used here are symmetric or similar to symmetric, so Bᵀ's
  spectrum is B's and the rotation is the one above.
* A factor may be low-rank: r < n orthonormal eigenvectors, the complement of their span an
  eigenspace with the single eigenvalue ``rest`` (PCSA's projections P = K diag(g) Kᵀ, BMR's hat
  matrix). At most one factor may be low-rank.
* A factor may be non-orthogonal (A = V diag(a) V⁻¹ with V⁻¹ ≠ Vᵀ, e.g. B⁻¹A from a generalised
  symmetric eigenproblem): pass ``inverse``. Methods that need orthonormal bases (diagonals,
  sampling) say so and raise otherwise.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.linalg

from malt.errors import DataError
from malt.numerics.threads import one_blas_thread


def inverse_sum_factors(a: np.ndarray, b: np.ndarray, rel_err: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """Φ (len(a), r), Ψ (len(b), r) with Φ Ψᵀ ≈ 1 / (a ⊕ b) to relative error ``rel_err`` for positive a, b:
    the trapezoidal rule on 1/x = ∫ exp(s − x eˢ) ds (exponential sums for 1/x: Braess & Hackbusch,
    IMA J. Numer. Anal. 25:685–697, 2005),
    whose every term factors as e^{−a eˢ} e^{−b eˢ}. Step h = π² / (ln(1/ε) + 4) (the rule's error for an
    integrand analytic in the strip |Im s| < π/2), truncated where the tails fall below ε. r grows with
    ln(max/min) of a ⊕ b: 16 nodes for a 3·10⁴ range at ε = 1e-2, 23 at 1e-3. All terms are positive, so a diagonal
    U1² (1 / (a ⊕ b)) U2²ᵀ built from them carries the same relative error entry by entry."""
    lo, hi = float(a.min() + b.min()), float(a.max() + b.max())
    log_eps = np.log(rel_err)
    h = np.pi ** 2 / (4.0 - log_eps)
    s = np.arange(log_eps - np.log(hi), np.log(3.0 - log_eps) - np.log(lo) + h, h)
    t = np.exp(s)
    root = np.sqrt(h * t)
    return root * np.exp(-np.outer(a, t)), root * np.exp(-np.outer(b, t))


KRYLOV_BLOCKS = 3
"""Depth of the block Krylov space of `top_eigenpairs` (applications of the operator per block)."""
KRYLOV_OVERSAMPLE = 10
"""Columns of each Krylov block beyond the eigenpairs asked for."""


def top_eigenpairs(matmat: Callable[[np.ndarray], np.ndarray], size: int, rank: int, *,
                   rng: np.random.Generator, blocks: int = KRYLOV_BLOCKS,
                   oversample: int = KRYLOV_OVERSAMPLE) -> tuple[np.ndarray, np.ndarray]:
    """The ``rank`` algebraically largest eigenpairs (values (rank,), orthonormal vectors (size, rank), largest
    first) of a symmetric operator given only by its products with blocks of vectors, ``matmat(X)`` = A X.

    Randomised block Krylov iteration with Rayleigh–Ritz (Musco & Musco, NIPS 2015, Alg. 2; Halko, Martinsson
    & Tropp, SIAM Rev. 2011 for the range finder): a seeded Gaussian block of b = rank + ``oversample``
    columns, the space [AΩ, A²Ω, …, A^q Ω] (q = ``blocks``) orthonormalised block by block
    (`orthonormal_basis`), and the eigenpairs of A projected on it. Indefinite A is fine (both ends of the
    spectrum enter the space; the top of it is kept). When q b ≥ size the space is everything and the answer is the exact eigendecomposition of
    A (the operator applied to the identity), so accuracy converges to exact as ``rank`` grows.

    Cost: q + 1 products of A with b vectors (the Rayleigh–Ritz step reuses A times each block but the last,
    which the Krylov iteration already computed), O(size (q b)²) for the orthonormalisation, O((q b)³) for the small
    eigenproblem; memory one (size, q b) array (the basis, filled block by block in place; the projection Qᵀ A Q
    is accumulated block by block as each A Q_j is computed, so A times the basis is never held whole) and two
    blocks. Nothing of size × size unless size ≤ q b.
    """
    rank = int(min(rank, size))
    b = min(rank + oversample, size)
    if not krylov_space(size, rank, blocks=blocks, oversample=oversample):
        w, V = np.linalg.eigh(_symmetric(matmat(np.eye(size))))
        order = np.argsort(-w, kind="stable")[:rank]
        return w[order], V[:, order]
    Q = np.empty((size, blocks * b))   # the Krylov basis, block by block
    T = np.zeros((blocks * b, blocks * b))  # Qᵀ A Q, filled block by block as each A Q_j is computed
    first = orthonormal_basis(matmat(rng.standard_normal((size, b))))
    if first.shape[1] < b:  # a product of rank < b: complete it with the random block's own directions
        first = np.linalg.qr(np.hstack([first, rng.standard_normal((size, b - first.shape[1]))]))[0]
    Q[:, :b] = first
    bounds = [(0, b)]  # the blocks' columns in Q
    cols = b  # columns of Q filled

    def project(start: int, stop: int) -> np.ndarray:
        """A Q_j for the block Q[:, start:stop], its column of blocks of T (Q_iᵀ A Q_j for every i ≤ j,
        mirrored: A is symmetric) filled in; returns A Q_j."""
        AQj = matmat(Q[:, start:stop])
        T[:stop, start:stop] = Q[:, :stop].T @ AQj
        T[start:stop, :start] = T[:start, start:stop].T
        return AQj

    applied = False  # whether A times the last block is in T
    for _ in range(blocks - 1):
        start, stop = bounds[-1]
        Y = project(start, stop)
        scale = float(np.abs(Y).max(initial=0.0))
        basis = [Q[:, a:z] for a, z in bounds]
        for _ in range(2):  # block Gram–Schmidt, repeated once for orthogonality to working precision
            for B in basis:
                Y -= B @ (B.T @ Y)
        # directions the space already holds leave only rounding error, which is not orthogonal to it
        U = orthonormal_basis(Y, floor=1e-10 * max(scale, 1e-300))
        del Y
        if U.shape[1] == 0:
            applied = True
            break
        for B in basis:
            U -= B @ (B.T @ U)
        U = orthonormal_basis(U)
        Q[:, cols:cols + U.shape[1]] = U
        bounds.append((cols, cols + U.shape[1]))
        cols += U.shape[1]
    if not applied:
        project(*bounds[-1])
    Q = Q[:, :cols]
    w, S = np.linalg.eigh(_symmetric(T[:cols, :cols]))
    order = np.argsort(-w, kind="stable")[:rank]
    return w[order], Q @ S[:, order]


def krylov_space(size: int, rank: int, *, blocks: int = KRYLOV_BLOCKS, oversample: int = KRYLOV_OVERSAMPLE) -> bool:
    """Whether `top_eigenpairs` approximates (a Krylov space smaller than ``size``) rather than decomposing the
    operator exactly: operators may then apply themselves less exactly (e.g. in single precision)."""
    return blocks * min(int(min(rank, size)) + oversample, size) < size


GRAM_DROP = 1e-7
"""`orthonormal_basis` drops directions whose singular value is below this fraction of the block's largest: the
Gram matrix resolves singular values down to √ε ≈ 1.5e-8 of the largest, and a Krylov block's direction that
small adds nothing a top eigenpair can use."""


def orthonormal_basis(Y: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Orthonormal columns (size, k ≤ b) spanning the directions of a tall block Y (size, b) whose singular
    values exceed ``floor`` and `GRAM_DROP` × the largest.

    Cholesky QR made safe for rank deficiency: the Gram matrix YᵀY (b × b) and its eigendecomposition give the
    right singular vectors W and values σ; Y W σ⁻¹ over the kept directions is orthonormal up to ε κ² ≤ 1e-2
    (κ ≤ 1/`GRAM_DROP`), and one Cholesky QR pass of that (κ ≈ 1) restores orthogonality to working precision
    (CholeskyQR2: Fukaya, Nakatsukasa, Yanagisawa & Yamamoto, ScalA 2014). Every step on the tall block is a
    matrix product or a triangular solve — BLAS-3, cache-blocked — where Householder QR and a thin SVD of a block
    larger than the cache are bound by memory bandwidth (at 500,000 × 110, one BLAS thread: 4.1 s against 10.2
    s for `numpy.linalg.qr` alone). Cost O(size b²); memory two blocks."""
    if Y.shape[1] == 0:
        return Y
    sigma2, W = np.linalg.eigh(_symmetric(Y.T @ Y))
    top = float(sigma2.max(initial=0.0))
    keep = (sigma2 > GRAM_DROP ** 2 * top) & (sigma2 > floor ** 2) & (sigma2 > 0.0)
    if not keep.any():
        return Y[:, :0]
    U = Y @ (W[:, keep] / np.sqrt(sigma2[keep]))
    L = np.linalg.cholesky(_symmetric(U.T @ U))
    # Uᵀ is Fortran-ordered: the triangular solve writes into U's own memory, no third (size, b) block
    return scipy.linalg.solve_triangular(L, U.T, lower=True, check_finite=False, overwrite_b=True).T


def _symmetric(T: np.ndarray) -> np.ndarray:
    return 0.5 * (T + T.T)


SHARED_POOL_ROWS = 1000
"""Single-precision decompositions of fewer rows run in one BLAS thread (`Eigenbasis.symmetric`); from
~1000 rows a second thread pays (1200 rows: 0.12 s at one thread, 0.08 s at two)."""


@dataclass(frozen=True, eq=False)
class Eigenbasis:
    """One factor A = V diag(values) V⁻¹.

    values : (r,) eigenvalues
    vectors : (n, r) eigenvectors V (orthonormal columns unless ``inverse`` is given)
    inverse : (r, n) V⁻¹ for a non-orthogonal basis (r == n); None means Vᵀ
    rest : eigenvalue of the orthogonal complement of span(V) when r < n (orthonormal V only)
    dense : the (n, n) matrix itself when known (mat-vecs then cost one product instead of two)
    """

    values: np.ndarray
    vectors: np.ndarray
    inverse: np.ndarray | None = None
    rest: float | None = None
    dense: np.ndarray | None = None

    def __post_init__(self):
        n, r = self.vectors.shape
        if self.values.shape != (r,):
            raise ValueError(f"{r} eigenvectors need {r} eigenvalues, got shape {self.values.shape}")
        if r < n and (self.rest is None or self.inverse is not None):
            raise ValueError("a low-rank factor needs orthonormal vectors and the complement's eigenvalue `rest`")

    # ---- constructors ------------------------------------------------------------------------
    @classmethod
    def symmetric(cls, K: np.ndarray, *, floor_rel: float = 1e-12, name: str = "kernel",
                  check_psd: bool = True, single: bool = False) -> "Eigenbasis":
        """Eigenbasis of a symmetric positive semidefinite K (symmetrised first); eigenvalues floored at
        ``floor_rel`` × the largest, so every later division is safe. O(n³).

        ``single`` decomposes in single precision (LAPACK's divide and conquer, half the time from
        n ≈ 200): the basis is then exact for a K + E with ‖E‖₂ ≈ 1e-7 ‖K‖₂ (backward stability), for
        solvers whose own tolerance is far looser. Vectors and values are returned in double precision.
        That solver is scipy's, whose OpenBLAS is a thread pool apart from numpy's; below
        ``SHARED_POOL_ROWS`` rows it runs in one thread, because with two threads each the worker that
        numpy's last product leaves spinning takes the core it would use (pma-map on CAL500, 502 rows:
        91 ms at two threads against 60 at one; at 502 rows the second thread gains it 6 %).

        Raises DataError when ``check_psd`` and K is clearly indefinite (smallest eigenvalue below
        −1e-6 × the largest): a user-supplied kernel that is not a covariance.
        """
        K = np.asarray(K, dtype=float)
        K = 0.5 * (K + K.T)
        if single:
            with one_blas_thread() if K.shape[0] < SHARED_POOL_ROWS else contextlib.nullcontext():
                d, U = scipy.linalg.eigh(K.astype(np.float32), driver="evd", check_finite=False)
            d, U = d.astype(float), U.astype(float)
        else:
            d, U = np.linalg.eigh(K)
        top = max(float(d.max()), 1e-300) if d.size else 1.0
        if check_psd and d.size and d.min() < -1e-6 * top:
            raise DataError(f"{name} is not positive semidefinite (smallest eigenvalue {d.min():.3g}); "
                            "use a valid kernel or raise the jitter.")
        return cls(np.maximum(d, floor_rel * top), U, dense=K)

    @classmethod
    def pencil(cls, A: np.ndarray, B: np.ndarray, form: str = "B^-1 A") -> "Eigenbasis":
        """Eigenbasis of B⁻¹A (form 'B^-1 A') or A B⁻¹ ('A B^-1') for symmetric A and SPD B, from the
        generalised problem A w = γ B w (Wᵀ B W = I): B⁻¹A = W diag(γ) WᵀB and A B⁻¹ = (BW) diag(γ) Wᵀ.
        This is how PCSA's G = Λ⁻¹ τBᵀB is diagonalised (its eq. 6). O(n³)."""
        gamma, W = scipy.linalg.eigh(A, B)
        if form == "B^-1 A":
            return cls(gamma, W, inverse=W.T @ B)
        if form == "A B^-1":
            return cls(gamma, B @ W, inverse=W.T)
        raise ValueError(f"form must be 'B^-1 A' or 'A B^-1', got {form!r}")

    @classmethod
    def low_rank(cls, vectors: np.ndarray, values: np.ndarray, rest: float = 0.0) -> "Eigenbasis":
        """A = V diag(values) Vᵀ + rest (I − V Vᵀ) for orthonormal V (n × r)."""
        return cls(np.asarray(values, dtype=float), np.asarray(vectors, dtype=float), None, float(rest))

    @classmethod
    def top(cls, matmat: Callable[[np.ndarray], np.ndarray], size: int, rank: int, *, rng: np.random.Generator,
            transform: Callable[[np.ndarray], np.ndarray] | None = None, rest: float = 0.0,
            blocks: int = KRYLOV_BLOCKS) -> "Eigenbasis":
        """Low-rank eigenbasis of a symmetric operator known by its products ``matmat(X)`` = A X: its top
        ``rank`` eigenpairs (`top_eigenpairs`), eigenvalues mapped by ``transform`` (e.g. clipped at zero),
        the complement of their span given the eigenvalue ``rest``. Full rank (an exact decomposition)
        when rank ≥ size. A sparse kernel (a kNN graph's, co-rating moments) enters this way without ever
        being dense. Cost: see `top_eigenpairs`."""
        values, vectors = top_eigenpairs(matmat, size, rank, rng=rng, blocks=blocks)
        values = values if transform is None else np.asarray(transform(values), dtype=float)
        if vectors.shape[1] == size:
            return cls(values, vectors)
        return cls.low_rank(vectors, values, rest)

    @classmethod
    def gram(cls, F: np.ndarray, W: np.ndarray) -> "Eigenbasis":
        """Low-rank eigenbasis of the symmetric PSD A = Fᵀ W F (n × n) for F (r, n) and an SPD W (r, r),
        never forming A: with W = L Lᵀ (Cholesky) and Lᵀ F = P diag(s) Qᵀ (thin SVD), A = Q diag(s²) Qᵀ,
        the complement of span(Q) having eigenvalue 0. PCSA's projections P = τ A S_A Aᵀ (F = Aᵀ, W = τ S_A)
        and P_Y = τ Yᵀ S_Y Y (its eq. 6) are of this form. O(n r² + r³)."""
        L = np.linalg.cholesky(np.asarray(W, dtype=float))
        _, s, Qt = np.linalg.svd(L.T @ np.asarray(F, dtype=float), full_matrices=False)
        return cls.low_rank(Qt.T, s ** 2)

    # ---- properties --------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.vectors.shape[0]

    @property
    def full_rank(self) -> bool:
        return self.vectors.shape[1] == self.vectors.shape[0]

    @property
    def orthonormal(self) -> bool:
        return self.inverse is None

    @property
    def inv(self) -> np.ndarray:
        """V⁻¹ (r, n)."""
        return self.vectors.T if self.inverse is None else self.inverse

    def matrix(self) -> np.ndarray:
        """The factor A itself, (n, n) (as given, or rebuilt: O(n³))."""
        if self.dense is not None:
            return self.dense
        A = (self.vectors * self.values) @ self.inv
        if not self.full_rank:
            A += self.rest * (np.eye(self.size) - self.vectors @ self.vectors.T)
        return A

    def function(self, f: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """f(A) = V diag(f(a)) V⁻¹ (n, n), e.g. the precision (f = 1/a) or a square root. O(n³)."""
        if not self.full_rank:
            raise ValueError("function() needs a full-rank factor")
        return (self.vectors * f(self.values)) @ self.inv


class KroneckerEigenbasis:
    """Operators of the form F ↦ V_A (φ(a, b) ⊙ V_A⁻¹ F V_B) V_B⁻¹ for factors A (n × n) and B (m × m).

    Build it once per pair of factors; each method then costs O(n²m + nm²) (the rotations) and O(nm)
    memory. ``left`` and ``right`` are `Eigenbasis` objects, or symmetric matrices (decomposed here
    with `Eigenbasis.symmetric`).
    """

    def __init__(self, left, right, *, names: tuple[str, str] = ("K1", "K2")):
        self.left = left if isinstance(left, Eigenbasis) else Eigenbasis.symmetric(left, name=names[0])
        self.right = right if isinstance(right, Eigenbasis) else Eigenbasis.symmetric(right, name=names[1])
        if not (self.left.full_rank or self.right.full_rank):
            raise ValueError("at most one factor may be low-rank")
        self.shape = (self.left.size, self.right.size)

    # ---- spectra -----------------------------------------------------------------------------
    @property
    def a(self) -> np.ndarray:
        return self.left.values

    @property
    def b(self) -> np.ndarray:
        return self.right.values

    def spectrum(self, kind: str = "sum") -> np.ndarray:
        """Eigenvalues of A ⊕ B (a_i + b_j, kind 'sum') or A ⊗ B (a_i b_j, 'product') as (r_A, r_B)."""
        if kind == "sum":
            return self.a[:, None] + self.b[None, :]
        if kind == "product":
            return self.a[:, None] * self.b[None, :]
        raise ValueError(f"kind must be 'sum' or 'product', got {kind!r}")

    # ---- rotations ---------------------------------------------------------------------------
    def rotate(self, C: np.ndarray) -> np.ndarray:
        """Ĉ = V_A⁻¹ C V_B (r_A, r_B): two n × m rotations (low-rank factors: their span only)."""
        return self.left.inv @ (C @ self.right.vectors)

    def unrotate(self, Ch: np.ndarray) -> np.ndarray:
        """V_A Ĉ V_B⁻¹ (n, m): two rotations. For full-rank factors, the inverse of `rotate`."""
        return self.left.vectors @ (Ch @ self.right.inv)

    def apply(self, C: np.ndarray, phi: Callable[[np.ndarray, np.ndarray], np.ndarray] | np.ndarray, *,
              span: bool = False):
        """F = V_A (Φ ⊙ V_A⁻¹ C V_B) V_B⁻¹ with Φ_ij = φ(a_i, b_j) (``phi`` a function of broadcast
        eigenvalue arrays, or the (r_A, r_B) array Φ itself for full-rank factors).

        On a low-rank factor's complement (eigenvalue ``rest``) the operator is φ(rest, b_j)
        (φ(a_i, rest)), applied without rotating that part. Four rotations.

        ``span``: return (F, V_A⁻¹ F), the second being F's coordinates in the left factor's
        eigenvectors, (r_A, m), at O(r_A m²) extra (BMR's weights are read off them; a low-rank factor
        may span everything, r_A = n, when the design has at least as many columns as rows). For a
        low-rank left factor with n > m + 2 r_A, and always with ``span``, F is assembled as
        C V_B diag(φ(rest, b)) V_B⁻¹ + V_A ((Φ − φ(rest, b)) ⊙ Ĉ) V_B⁻¹: one n × m × m product instead of two.
        """
        left, right = self.left, self.right
        if left.full_rank and right.full_rank:
            Phi = phi if isinstance(phi, np.ndarray) else phi(self.a[:, None], self.b[None, :])
            if span:  # a "low-rank" factor that spans everything (BMR with p ≥ n training rows)
                coords = (self.rotate(C) * Phi) @ right.inv
                return left.vectors @ coords, coords
            return self.unrotate(self.rotate(C) * Phi)
        if callable(phi) is False:
            raise ValueError("a low-rank factor needs phi as a function (its complement is evaluated at `rest`)")
        if not left.full_rank:  # A = V a Vᵀ + rest (I − V Vᵀ)
            on_rest = phi(np.asarray(left.rest), self.b)[None, :]
            Phi = phi(self.a[:, None], self.b[None, :])
            if span or C.shape[0] > self.shape[1] + 2 * self.a.size:
                Ch = (left.inv @ C) @ right.vectors
                out = C @ ((right.vectors * on_rest) @ right.inv)
                out += left.vectors @ ((Ch * (Phi - on_rest)) @ right.inv)
                return (out, (Ch * Phi) @ right.inv) if span else out
            CB = C @ right.vectors
            core = left.vectors.T @ CB
            out = CB * on_rest + left.vectors @ (core * (Phi - on_rest))
            return out @ right.inv
        AC = left.inv @ C
        on_rest = phi(self.a, np.asarray(right.rest))[:, None]
        core = AC @ right.vectors
        out = AC * on_rest + (core * (phi(self.a[:, None], self.b[None, :]) - on_rest)) @ right.vectors.T
        return left.vectors @ out

    # ---- solves ------------------------------------------------------------------------------
    def solve_sylvester(self, C: np.ndarray) -> np.ndarray:
        """F with A F + F B = C (e.g. dissertation eq. 5.22 with C = K1 X̃). Needs a_i + b_j ≠ 0.
        Four rotations."""
        return self.apply(C, lambda a, b: 1.0 / (a + b))

    def solve_stein(self, C: np.ndarray) -> np.ndarray:
        """F with F − A F B = C (PCSA eq. 6; BMR's joint mean update). Needs a_i b_j ≠ 1. Four rotations."""
        return self.apply(C, lambda a, b: 1.0 / (1.0 - a * b))

    # ---- Kronecker sum / product as covariances ----------------------------------------------
    def matvec(self, V: np.ndarray, kind: str = "sum", shift: float = 0.0) -> np.ndarray:
        """(A ⊕ B + shift·I) vec V = vec(A V + V B + shift V), or (A ⊗ B + shift·I) vec V =
        vec(A V B + shift V). Two products when both factors were built from matrices, else four
        rotations."""
        A, B = self.left.dense, self.right.dense
        if A is not None and B is not None:
            out = A @ V + V @ B if kind == "sum" else A @ V @ B
            return out + shift * V if shift else out
        spec = self.spectrum(kind) + shift
        return self.apply(V, spec if self.left.full_rank and self.right.full_rank else
                          (lambda a, b: (a + b if kind == "sum" else a * b) + shift))

    def precondition(self, R: np.ndarray, kind: str = "sum", shift: float = 0.0) -> np.ndarray:
        """(A ⊕ B + shift·I)⁻¹ vec R (or ⊗): the full covariance's inverse, elementwise in the basis.
        The precision of PMA's X (eq. 5.12) when shift = 0; the preconditioner of a masked solve.
        Four rotations."""
        spec = self.spectrum(kind) + shift
        return self.unrotate(self.rotate(R) / spec)

    def inverse_diagonal(self, kind: str = "sum", shift: float = 0.0, rel_err: float | None = None) -> np.ndarray:
        """diag((A ⊕ B + shift·I)⁻¹) as an (n, m) array: Σ_ab U_A[i,a]² U_B[j,b]² / (a_a + b_b + shift).
        Orthonormal full-rank bases only. Two rotations (of the squared bases), O(n²m + nm²).

        ``rel_err`` (kind 'sum', positive spectrum): every entry to that relative accuracy from
        `inverse_sum_factors` (1/(a ⊕ b) ≈ Φ Ψᵀ with r ≈ 16 terms at 1 %), O(n²r + m²r + nmr) — for a
        preconditioner, which needs no more."""
        self._need_orthonormal("inverse_diagonal")
        U1, U2 = self.left.vectors, self.right.vectors
        if rel_err is None:
            return (U1 * U1) @ (1.0 / (self.spectrum(kind) + shift)) @ (U2 * U2).T
        if kind != "sum":
            raise ValueError("an approximate inverse diagonal needs kind='sum'")
        Phi, Psi = inverse_sum_factors(self.a + shift, self.b, rel_err)
        return ((U1 * U1) @ Phi) @ ((U2 * U2) @ Psi).T

    # ---- exact Gaussian sampling -------------------------------------------------------------
    def sample(self, rng: np.random.Generator, kind: str = "sum", shift: float = 0.0) -> np.ndarray:
        """One draw X ~ N(0, A ⊕ B + shift·I) (or ⊗) as an (n, m) array: V_A (√spectrum ⊙ Z) V_Bᵀ.
        Orthonormal full-rank bases only. Two rotations."""
        self._need_orthonormal("sample")
        Z = rng.standard_normal(self.shape)
        return self.unrotate(np.sqrt(self.spectrum(kind) + shift) * Z)

    def split_sum(self, X: np.ndarray, rng: np.random.Generator | None = None, *,
                  rotated: np.ndarray | None = None, previous_g: np.ndarray | None = None,
                  overrelax: float = 0.0, with_mean: bool = True, single: bool = False):
        """For X = F + G with the columns of F ~ N(0, A) and the rows of G ~ N(0, B) (PMA, eq. 5.5),
        the posterior of G given X: in the basis, mean X̂ ⊙ b / (a + b) and independent variances
        a b / (a + b) (precision A⁻¹ ⊕ B⁻¹ without inverting A). E[F | X] = X − E[G | X] solves the
        Sylvester equation F B + A F = A X (eq. 5.22).

        Returns (mean of G or None, draw of G or None). With ``rng`` a draw is returned (and the mean only
        when ``with_mean``); ``overrelax`` α ∈ (−1, 1) makes it Adler's over-relaxed update of
        ``previous_g`` (α = 0: an independent draw). ``rotated`` may pass V_A⁻¹ X V_B when already known.
        ``single`` rotates in single precision (a sampler's draws: relative error ~1e-6, half the cost).
        Two rotations per output and per input rotated here.
        """
        self._need_orthonormal("split_sum")
        a, b = self.a[:, None], self.b[None, :]
        S = a + b
        rotate, unrotate = (self._rotations32() if single else (self.rotate, self.unrotate))
        Xh = rotate(X) if rotated is None else rotated
        mean_h = Xh * (b / S)
        mean = unrotate(mean_h) if (with_mean or rng is None) else None
        if rng is None:
            return mean, None
        noise_h = np.sqrt(a * b / S) * rng.standard_normal(Xh.shape)
        if overrelax:
            prev_h = rotate(previous_g)
            draw_h = mean_h + overrelax * (prev_h - mean_h) + np.sqrt(1.0 - overrelax ** 2) * noise_h
        else:
            draw_h = mean_h + noise_h
        return mean, unrotate(draw_h)

    def _rotations32(self):
        """(rotate, unrotate) computed in single precision, results in double (orthonormal bases)."""
        if getattr(self, "_single", None) is None:
            self._single = tuple(np.ascontiguousarray(f.vectors, dtype=np.float32) for f in (self.left, self.right))
        U1, U2 = self._single
        return (lambda V: (U1.T @ (V.astype(np.float32) @ U2)).astype(float),
                lambda V: (U1 @ (V.astype(np.float32) @ U2.T)).astype(float))

    def _need_orthonormal(self, what: str):
        if not (self.left.orthonormal and self.right.orthonormal and self.left.full_rank and self.right.full_rank):
            raise ValueError(f"{what} needs orthonormal full-rank eigenbases (symmetric factors)")

    # ---- Gaussian conditioning on a partially observed matrix -------------------------------
    def conditional_mean(self, M: np.ndarray, *, kind: str = "sum", noise: float = 0.0, tol: float = 1e-6,
                         max_iter: int = 1000, x0: np.ndarray | None = None, single: bool | None = None):
        """E[X | X_O] for vec X ~ N(0, Σ), Σ = A ⊕ B + noise·I (kind 'sum', PMA eq. 5.12) or A ⊗ B + noise·I
        ('product', intrinsic LMC), given the entries of M that are not NaN (O); U are the others.

        The missing entries solve their normal equations Λ_UU x_U = −Λ_UO x_O with the precision
        Λ = Σ⁻¹ applied in the basis (four rotations), by conjugate gradients preconditioned with the
        exact diagonal of Λ_UU (`inverse_diagonal`). Noise on every entry leaves E[x_U | x_O] equal to
        the noise-free signal's conditional mean, so one solver serves PMA-EXACT (noise > 0), PMA-MAP's
        fixed point (noise = 0, eqs. 5.22–5.23) and a single GP (one factor zero, noise > 0).
        Orthonormal full-rank bases only.

        Parameters
        ----------
        M : (n, m) with NaN at unobserved entries
        tol : stop when the preconditioned residual norm √(rᵀD⁻¹r) ≤ tol × that of the right-hand side
        x0 : (n, m) initial values of the missing entries (warm start), or None (zeros)
        single : rotate in single precision inside the iteration (about twice as fast; the operator's
            relative error, ~1e-6, is far below a tolerance ≥ 1e-4). None: when tol ≥ 1e-4. The iterate,
            residuals and everything returned stay in double precision.

        Returns
        -------
        (X̃, X̂, info): X̃ (n, m) with the observed entries and the conditional means elsewhere,
        X̂ = V_A⁻¹ X̃ V_B its rotation (kept up to date by the iteration: free), info with
        'iterations', 'converged' and 'residual' (the final relative residual).
        Cost O(nm(n + m)) per iteration, O(nm) memory; nothing of size nm × nm.
        """
        self._need_orthonormal("conditional_mean")
        M = np.asarray(M, dtype=float)
        missing = np.isnan(M)
        S = self.spectrum(kind) + noise
        Xt = np.where(missing, 0.0, M)
        if not missing.any():
            return Xt, self.rotate(Xt), {"iterations": 0, "converged": True, "residual": 0.0}

        single = tol >= 1e-4 if single is None else single
        mask = missing.astype(float)
        if single:
            U1, U2 = (np.ascontiguousarray(b.vectors, dtype=np.float32) for b in (self.left, self.right))
            S32 = S.astype(np.float32)

            inv_S32 = 1.0 / S32

            def rotate(V):
                return (U1.T @ (V.astype(np.float32) @ U2)).astype(float)

            def precision(V_h):
                return (U1 @ ((V_h.astype(np.float32) * inv_S32) @ U2.T)) * mask

            D = ((U1 * U1) @ inv_S32 @ (U2 * U2).T).astype(float)
        else:
            rotate = self.rotate

            def precision(V_h):
                return self.unrotate(V_h / S) * mask

            D = self.inverse_diagonal(kind, noise)

        Xh = rotate(Xt)
        B = -precision(Xh)  # right-hand side −Λ_UO x_O
        b_norm = float(np.sqrt(np.vdot(B, B / D)))
        if x0 is not None:
            Xt[missing] = x0[missing]
            Xh = rotate(Xt)
            R = -precision(Xh)
        else:
            R = B
        if b_norm == 0.0:
            Xt = np.where(missing, 0.0, M)
            return Xt, self.rotate(Xt), {"iterations": 0, "converged": True, "residual": 0.0}
        Z = R / D
        P = Z.copy()
        rz = float(np.vdot(R, Z))
        residual = np.sqrt(max(rz, 0.0)) / b_norm
        it = 0
        while residual > tol and it < max_iter:
            it += 1
            P_h = rotate(P)
            AP = precision(P_h)
            alpha = rz / float(np.vdot(P, AP))
            Xt += alpha * P
            Xh += alpha * P_h
            R -= alpha * AP
            Z = R / D
            rz_new = float(np.vdot(R, Z))
            residual = np.sqrt(max(rz_new, 0.0)) / b_norm
            P = Z + (rz_new / rz) * P
            rz = rz_new
        return Xt, Xh, {"iterations": it, "converged": bool(residual <= tol), "residual": float(residual)}

    def conditional_sample(self, M: np.ndarray, rng: np.random.Generator, *, mean: np.ndarray | None = None,
                           kind: str = "sum", noise: float = 0.0, tol: float = 1e-6, max_iter: int = 1000):
        """An exact draw of the unobserved entries of M from p(X_U | X_O) (same model as
        `conditional_mean`), by conditioning a prior draw: X = Z + E[X − Z | X_O − Z_O] with
        Z ~ N(0, Σ) (`sample`). ``mean`` (the conditional mean, if known) warm-starts the solve.

        Returns (X̃ with the observed entries and the drawn ones, its rotation X̂, info). Cost: one
        prior draw and one `conditional_mean` solve.
        """
        missing = np.isnan(M)
        Z_h = np.sqrt(self.spectrum(kind) + noise) * rng.standard_normal(self.shape)
        Z = self.unrotate(Z_h)
        x0 = None if mean is None else mean - Z
        D, D_h, info = self.conditional_mean(np.where(missing, np.nan, M - Z), kind=kind, noise=noise, tol=tol,
                                             max_iter=max_iter, x0=x0)
        return np.where(missing, D + Z, M), D_h + Z_h, info
