# Koyejo, Lee & Ghosh 2014 (constrained matrix-variate GPs), §5.2 recommender protocol, Tables 3-4 and
# Figure 4, with these departures (captions of the targets):
# * Data: Flixster and Epinions (5,000 users × 5,000 items with social graphs) are not in the data store;
#   FilmTrust and the CiaoDVD core (trust graphs on users, identity on items — as the paper did for
#   items) and MovieLens-100K (user-attribute and item-genre kNN graphs) stand in, plus the Yamanishi
#   drug-target sets as a stand-in for the implicit-feedback gene-disease data of §5.1 (without its
#   sampled negatives: every entry of those matrices is observed).
# * Splits: "five-fold cross validation" — here 5 random 80/20 splits (runs=5, train_fraction=0.8) of
#   the ratings (known rows) or of the rows (new rows), not a partition into five disjoint folds.
# * Models: Con. MV-GP and Trace GP with the diffusion (D) and identity (I) covariances, MV-GP (D),
#   KPMF-5/-20 (D), PMF-5/-20 (I), as the paper; the diffusion kernel exp(-L) + I (a = b = 1) as the
#   paper. The identity covariance is not run on new rows (it cannot predict them, as the paper notes).
# * Model selection: the paper searches λ over 5 and σ² over 20 log-spaced values in [1e-3, 1e3]
#   (100 fits per split) separately for RMSE and for R@20. MVGP_GRID=paper passes that grid (in the
#   paper's absolute units, scale=absolute); the default (MVGP_GRID=default) uses the algorithms'
#   defaults: λσ² (KPMF: σ²) in units of the data's null edge, chosen by inner CV on RMSE, and R@20
#   from a second, zero-filled fit of the same model (ranking=zero-filled; Steck 2010, PureSVD)
#   instead of a second selection by R@20.
# * Offsets: every model removes regularised row + column biases before the fit (our defaults; the
#   paper centres by the global mean): MVGP_CENTER=global reproduces the paper's centring for the GP
#   models and PMF.
# The bias model (baseline), biased MF and the ranking baseline (popularity) run on the same splits.

MVGP_RUNS ?= 5
MVGP_GRID ?= default
MVGP_CENTER ?= biases
MVGP_DATASETS ?= filmtrust ciaodvd-trust movielens-100k yamanishi-ic yamanishi-gpcr yamanishi-nr
MVGP_NEW_DATASETS ?= filmtrust ciaodvd-trust movielens-100k yamanishi-ic
MVGP_KS ?= 1 5 10 15 20
MVGP_METRICS = --metric rmse --metric recall@k --metric precision@k
MVGP_RATINGS = --task ratings --task-param runs=$(MVGP_RUNS) --task-param train_fraction=0.8
MVGP_BASELINES = baseline biased-mf popularity
_GRIDS_paper = --param sigma2_grid=$(shell $(BIN)/python -c "from malt.algorithms.mvgp import PAPER_SIGMA2 as s; print(','.join(map(repr, s)))")
_SCALE_paper = --param scale=absolute
_LAMS_paper = --param lam_grid=$(shell $(BIN)/python -c "from malt.algorithms.mvgp import PAPER_LAMBDA as s; print(','.join(map(repr, s)))")
# per-algorithm parameters ($$cov: 'diffusion;identity' on known rows, 'diffusion' on new rows), as a shell snippet setting $p
MVGP_P = case $$a in \
  con-mvgp|trace-gp) p="--param row_cov=$$cov --param center=$(MVGP_CENTER) $(_GRIDS_$(MVGP_GRID)) $(_LAMS_$(MVGP_GRID)) $(_SCALE_$(MVGP_GRID))";; \
  mvgp) p="--param center=$(MVGP_CENTER) $(_GRIDS_$(MVGP_GRID))";; \
  kpmf) p="--param rank=5;20 --param center=$(MVGP_CENTER) $(_GRIDS_$(MVGP_GRID)) $(_SCALE_$(MVGP_GRID))";; \
  pmf) p="--param rank_grid=5;20 --param center=$(MVGP_CENTER)";; \
  *) p="";; esac;
MVGP_ALGOS = con-mvgp trace-gp mvgp kpmf pmf $(MVGP_BASELINES)
# relevance threshold per dataset (a test rating is relevant when > this), as a shell snippet
MVGP_REL = rel=4.0; case $$d in filmtrust) rel=3.0;; yamanishi-*) rel=1.5;; esac;

FIGURES_ALL += table-mvgp-3 table-mvgp-4 figure-mvgp-4
.PHONY: table-mvgp-3 table-mvgp-4 figure-mvgp-4

# Tables 3-4, known rows: RMSE and R@20 of every model, 5 random 80/20 splits of the ratings.
table-mvgp-3: install
	for d in $(MVGP_DATASETS); do $(MVGP_REL) cov="diffusion;identity"; for a in $(call algos,$(MVGP_ALGOS)); do $(MVGP_P) \
	  $(CV) --algo $$a --dataset $$d $(MVGP_RATINGS) --task-param relevant=$$rel $$p || exit 1; done; done
	$(call tables,table-mvgp-3,--task ratings --where new_rows=false --where train_fraction=0.8 $(MVGP_METRICS))

# Tables 3-4, new rows: 20 % of the rows held out, predicted through the row covariance (identity not run).
table-mvgp-4: install
	for d in $(MVGP_NEW_DATASETS); do $(MVGP_REL) cov=diffusion; for a in $(call algos,$(MVGP_ALGOS)); do $(MVGP_P) \
	  $(CV) --algo $$a --dataset $$d $(MVGP_RATINGS) --task-param new_rows=true \
	    --task-param relevant=$$rel $$p || exit 1; done; done
	$(call tables,table-mvgp-4,--task ratings --where new_rows=true --where train_fraction=0.8 $(MVGP_METRICS))

# Figure 4: recall@k, k = 1 .. 20, known rows of MovieLens-100K (one experiment per k: units are scored
# where they are fitted, so each k refits; the paper draws k = 1, 2, ..., 20).
figure-mvgp-4: install
	for k in $(MVGP_KS); do cov="diffusion;identity"; for a in $(call algos,$(MVGP_ALGOS)); do $(MVGP_P) \
	  $(CV) --algo $$a --dataset movielens-100k $(MVGP_RATINGS) --task-param k=$$k $$p || exit 1; done; done
	$(PLOT) --task ratings --dataset movielens-100k --where new_rows=false --where train_fraction=0.8 \
	  $(foreach a,$(call algos,$(MVGP_ALGOS)),--algo $(a)) --metric recall@k --out $(FIGOUT)/figure-mvgp-4
