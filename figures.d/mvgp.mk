# Koyejo, Lee & Ghosh 2014 (constrained matrix-variate GPs): Tables 3-4 and Figure 4 shape on public
# stand-ins (OMIM/Medline are not public): MovieLens-100K, FilmTrust, CiaoDVD core, Yamanishi DTI.
# Known rows (train_fraction 0.7 of entries) and new rows (0.3 of rows held out).

MVGP_ALGOS = con-mvgp trace-gp kpmf pmf
MVGP_RUNS ?= 5
MVGP_RATINGS = --task ratings --task-param runs=$(MVGP_RUNS)
# relevance threshold per dataset (a test rating is relevant when > this), as a shell snippet
MVGP_REL = rel=4.0; case $$d in filmtrust) rel=3.0;; yamanishi-*) rel=1.5;; esac;
MVGP_DATASETS = movielens-100k filmtrust ciaodvd-trust yamanishi-gpcr yamanishi-ic yamanishi-nr
MVGP_METRICS = --metric rmse --metric recall@k --metric precision@k

FIGURES_ALL += table-mvgp-3 table-mvgp-4 figure-mvgp-4
.PHONY: table-mvgp-3 table-mvgp-4 figure-mvgp-4

# Table 3 (known rows): RMSE / recall@20 of con-mvgp and trace-gp vs kpmf and pmf.
table-mvgp-3: install
	for d in $(MVGP_DATASETS); do $(MVGP_REL) for a in $(call algos,$(MVGP_ALGOS)); do \
	  $(CV) --algo $$a --dataset $$d $(MVGP_RATINGS) --task-param relevant=$$rel || exit 1; done; done
	$(call tables,table-mvgp-3,--task ratings --where new_rows=false $(MVGP_METRICS))

# Table 4 (new rows, predicted through the row covariance only).
table-mvgp-4: install
	for d in filmtrust ciaodvd-trust yamanishi-ic movielens-100k; do $(MVGP_REL) for a in $(call algos,$(MVGP_ALGOS)); do \
	  $(CV) --algo $$a --dataset $$d $(MVGP_RATINGS) --task-param new_rows=true \
	    --task-param relevant=$$rel || exit 1; done; done
	$(call tables,table-mvgp-4,--task ratings --where new_rows=true $(MVGP_METRICS))

# Figure 4: recall@k against k (5, 10, 20, 50) on MovieLens known rows (one experiment per k).
MVGP_KS = 5 10 20 50
figure-mvgp-4: install
	for k in $(MVGP_KS); do for a in $(call algos,$(MVGP_ALGOS)); do \
	  $(CV) --algo $$a --dataset movielens-100k $(MVGP_RATINGS) --task-param k=$$k || exit 1; done; done
	$(PLOT) --task ratings --dataset movielens-100k --where new_rows=false \
	  $(foreach a,$(call algos,$(MVGP_ALGOS)),--algo $(a)) --metric recall@k --out $(FIGOUT)/figure-mvgp-4
