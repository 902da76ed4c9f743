# Koyejo, Lee & Ghosh 2014 (constrained matrix-variate GPs): the shape of Tables 3-4 (Flixster,
# Epinions) and Figure 4 on public stand-ins (Flixster/Epinions/OMIM/Medline are not in the data
# store): MovieLens-100K, FilmTrust, CiaoDVD core (trust graphs), Yamanishi DTI.
# Known rows (train_fraction 0.7 of entries) and new rows (0.3 of rows held out).
# λ and σ² are chosen per run by inner validation (10% of the training ratings) on the grid named
# by MVGP_GRID (coarse: 4 points of the paper's grid; paper: the paper's 100). KPMF and PMF at the
# paper's rank 5 (KPMF-5 / PMF-5); PMF's ridge is its default (not cross-validated).

MVGP_ALGOS = con-mvgp trace-gp kpmf pmf
MVGP_RUNS ?= 5
MVGP_GRID ?= coarse
MVGP_RATINGS = --task ratings --task-param runs=$(MVGP_RUNS)
# per-algorithm parameters, as a shell snippet setting $p
MVGP_P = case $$a in pmf) p="--param rank=5 --param center=global";; \
  kpmf) p="--param rank=5 --param select=inner-cv --param grid=$(MVGP_GRID)";; \
  *) p="--param select=inner-cv --param grid=$(MVGP_GRID)";; esac;
# relevance threshold per dataset (a test rating is relevant when > this), as a shell snippet
MVGP_REL = rel=4.0; case $$d in filmtrust) rel=3.0;; yamanishi-*) rel=1.5;; esac;
MVGP_DATASETS ?= yamanishi-ic filmtrust ciaodvd-trust movielens-100k yamanishi-gpcr yamanishi-nr
MVGP_NEW_DATASETS ?= yamanishi-ic filmtrust ciaodvd-trust movielens-100k
MVGP_METRICS = --metric rmse --metric recall@k --metric precision@k

FIGURES_ALL += table-mvgp-3 table-mvgp-4 figure-mvgp-4
.PHONY: table-mvgp-3 table-mvgp-4 figure-mvgp-4

# Table 3 (known rows): RMSE / recall@20 of con-mvgp and trace-gp vs kpmf and pmf.
table-mvgp-3: install
	for d in $(MVGP_DATASETS); do $(MVGP_REL) for a in $(call algos,$(MVGP_ALGOS)); do $(MVGP_P) \
	  $(CV) --algo $$a --dataset $$d $(MVGP_RATINGS) --task-param relevant=$$rel $$p || exit 1; done; done
	$(call tables,table-mvgp-3,--task ratings --where new_rows=false $(MVGP_METRICS))

# Table 4 (new rows, predicted through the row covariance only).
table-mvgp-4: install
	for d in $(MVGP_NEW_DATASETS); do $(MVGP_REL) for a in $(call algos,$(MVGP_ALGOS)); do $(MVGP_P) \
	  $(CV) --algo $$a --dataset $$d $(MVGP_RATINGS) --task-param new_rows=true \
	    --task-param relevant=$$rel $$p || exit 1; done; done
	$(call tables,table-mvgp-4,--task ratings --where new_rows=true $(MVGP_METRICS))

# Figure 4: recall@k against k on MovieLens known rows (one experiment per k, drawn as curves over k;
# each k refits the models, since units are scored where they are fitted).
MVGP_KS ?= 5 10 20 50
figure-mvgp-4: install
	for k in $(MVGP_KS); do for a in $(call algos,$(MVGP_ALGOS)); do $(MVGP_P) d=movielens-100k; \
	  $(CV) --algo $$a --dataset movielens-100k $(MVGP_RATINGS) --task-param k=$$k $$p || exit 1; done; done
	$(PLOT) --task ratings --dataset movielens-100k --where new_rows=false \
	  $(foreach a,$(call algos,$(MVGP_ALGOS)),--algo $(a)) --metric recall@k --out $(FIGOUT)/figure-mvgp-4
