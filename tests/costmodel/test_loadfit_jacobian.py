"""The load fit's vectorised residuals and analytic Jacobian against what they replace: the per-observation
residuals of LoadParams.tps and a finite-difference Jacobian, on published sweeps (bench/load_sweeps.py):
the multi-load ones, a MoE target's, and every tenth of the rest."""

import numpy as np
import pytest

from bench import load_accuracy
from specdash.costmodel import loadfit
from specdash.costmodel.loadmodel import (
    LoadObservation,
    prior_load_params,
    rescale_prior,
    step_ms_from_observations,
)
from specdash.costmodel.priors import DeploymentFacts


@pytest.fixture(scope="module")
def sweeps() -> list:
    every = load_accuracy.all_sweeps()
    multi = [s for s in every if len(s.loads) > 1]
    moe = [s for s in every if s.facts.architecture is not None and s.facts.architecture.is_moe]
    rest = [s for s in every if s not in multi and s not in moe]
    chosen = multi + moe[:2] + rest[::10]
    assert len(multi) >= 5 and moe
    return chosen


def _design(observations, prior):
    names = loadfit.free_parameters(observations, prior)
    start = rescale_prior(prior, step_ms_from_observations(observations, prior))
    bounds, _, _ = loadfit._bounds_and_scales(start, names)
    x = np.array([loadfit._value(start, n) for n in names])
    return loadfit._Design(observations, start, names), start, names, bounds, x


def test_residuals_and_jacobian_match_the_per_observation_model(sweeps):
    """Away from the prior too (each parameter moved by up to 30 %): the residuals equal the scalar
    model's to rounding, the Jacobian central differences to 1e-5."""
    rng = np.random.default_rng(0)
    for sweep in sweeps:
        observations = list(sweep.observations)
        design, start, names, bounds, prior_x = _design(observations, sweep.prior())
        assert design.analytic
        for _ in range(2):
            x = np.clip(prior_x * (1 + 0.3 * rng.standard_normal(prior_x.size)), bounds[0], bounds[1])
            scalar = loadfit._residuals(loadfit._assemble(start, names, x), observations)
            np.testing.assert_allclose(design.residuals(x), scalar, rtol=0, atol=1e-12)
            numeric = np.empty((len(observations), x.size))
            for j in range(x.size):
                h = 1e-6 * max(abs(x[j]), 1e-3)
                up, down = x.copy(), x.copy()
                up[j] += h
                down[j] -= h
                numeric[:, j] = (design.residuals(up) - design.residuals(down)) / (2 * h)
            np.testing.assert_allclose(design.jacobian(x), numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_the_analytic_fit_lands_where_the_finite_difference_one_did(sweeps):
    """Every fitted parameter within 0.1 % (or 1e-5 absolute, for floors near 0) and every observation's
    error within 1e-4 of the fit with the old per-observation residuals and numeric Jacobian."""
    for sweep in sweeps:
        old = loadfit.fit_load_model(sweep.observations, sweep.prior(), numeric_jacobian=True)
        new = loadfit.fit_load_model(sweep.observations, sweep.prior())
        assert new.free == old.free
        for name in old.free:
            assert loadfit._value(new.params, name) == pytest.approx(
                loadfit._value(old.params, name), rel=1e-3, abs=1e-5
            ), (sweep.name, name)
        np.testing.assert_allclose(new.errors, old.errors, rtol=0, atol=1e-4)


def test_a_drafter_left_out_of_the_free_parameters_is_fitted_numerically():
    """A drafter not fitted while others are costs its prior times their median move: no derivative to
    write down, so that fit keeps the finite-difference Jacobian (and still converges)."""
    observations = [
        LoadObservation(1.0, 3, 60.0, 2.5, drafter="a"),
        LoadObservation(4.0, 3, 50.0, 2.5, drafter="a"),
        LoadObservation(1.0, 3, 55.0, 2.4, drafter="b"),
        LoadObservation(1.0, 0, 40.0),
    ]
    prior = prior_load_params(DeploymentFacts(), 10.0, {"a": "eagle", "b": "eagle"})
    free = ("step_ms", "knee_log", "token_floor", "draft_step_ms:a", "overhead_ms")
    _, start, _, _, _ = _design(observations, prior)
    assert not loadfit._Design(observations, start, free).analytic
    fit = loadfit.fit_load_model(observations, prior, free)
    assert fit.n_observations == 4 and fit.median_abs_rel_error < 0.2
