# figures.mk — one target per reproduced table/figure of the dissertation (Agovic 2011).
# Included from the Makefile (uses $(MALT) and $(BIN) from there).
#
#   make figures          every reproduction at full size into $(FIGREPO), outputs in $(FIGOUT)/
#   make figures-quick    the reproductions whose algorithms are registered, 2 folds, in minutes
#   make table-4-4 ...    one reproduction
#
# Runs are incremental: `malt cv` skips every unit already stored in the repository, so re-running a
# target only computes what is new (an added algorithm, a new setting) and redraws the outputs.

MALT      ?= .venv/bin/malt
FIGREPO   ?= figures-results
FIGOUT    ?= figures
FIGDATA   ?= $(if $(MALT_DATA),$(MALT_DATA),../shared/datasets)
CVFLAGS   ?=
# In quick mode only these algorithms run (extend as algorithms land in the registry).
ALGOS_AVAILABLE ?= mllr mlsvm column-mean pmf
# Registered but slower, or still being written; add to ALGOS_AVAILABLE once quick enough.
ALGOS_PENDING   ?= bmr ccml mlknn iblr gpr pma-map pma-gibbs pma-exact ilmc gf mwem lnp lgc tikreg ck ltsalp
ALGOS_ONLY ?=
# Targets run by figures-quick: those with at least one algorithm in ALGOS_AVAILABLE.
FIGURES_QUICK ?= table-4-4 table-4-5 table-4-6 table-5-1
FIGURES_ALL    = table-4-4 table-4-5 table-4-6 table-4-7 table-5-1 fig-5-2 fig-3-4

CV    = MALT_DATA=$(FIGDATA) $(MALT) cv --repo $(FIGREPO) --wait --quiet $(CVFLAGS)
PLOT  = $(MALT) plot $(FIGREPO)
TABLE = $(MALT) table $(FIGREPO)
# $(call algos,LIST): LIST, or only its members in ALGOS_ONLY (quick mode); then as --algo flags.
algos    = $(if $(ALGOS_ONLY),$(filter $(ALGOS_ONLY),$(1)),$(1))
algoflags = $(foreach a,$(call algos,$(1)),--algo $(a))
# $(call tables,NAME,FILTERS): markdown and LaTeX tables of one reproduction.
tables = mkdir -p $(FIGOUT) && $(TABLE) $(2) --format markdown --out $(FIGOUT)/$(1).md \
	&& $(TABLE) $(2) --format latex --out $(FIGOUT)/$(1).tex && cat $(FIGOUT)/$(1).md

ML_METRICS = --metric one_error --metric average_precision --metric coverage --metric hamming_loss --metric ranking_loss
MISSING_FRACTIONS = 0.1 0.15 0.2 0.25 0.3
# A reference line in the label-recovery figures (not in the papers).
MISSING_BASELINES ?= column-mean

T44_ALGOS = bmr ccml mlknn iblr mllr mlsvm
T46_ALGOS = bmr pmf $(MISSING_BASELINES)
T47_ALGOS = bmr
T47D_ALGOS = bmr ccml mlknn iblr
T51_ALGOS = gpr pma-map pma-gibbs pma-exact ilmc pmf bmr $(MISSING_BASELINES)
F52_ALGOS = pma-gibbs pma-map gpr
F34_ALGOS = gf gwem lnp lgc tikreg ck ltsalp
F34_DATASETS ?= hepatitis breast-cancer wine iris glass pima usps letter-ef

.PHONY: figures figures-quick $(FIGURES_ALL)

figures: install
	@for target in $(FIGURES_ALL); do $(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory $$target || exit 1; done
	$(PLOT) --out $(FIGOUT)/all
	$(MALT) report $(FIGREPO) --out $(FIGOUT)/report

figures-quick: install
	@for target in $(FIGURES_QUICK); do \
	  $(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory $$target FIGREPO=figures-quick-results FIGOUT=figures-quick \
	    CVFLAGS='--folds 2' ALGOS_ONLY='$(ALGOS_AVAILABLE)' || exit 1; done
	$(MALT) report figures-quick-results --out figures-quick/report

# Tables 4.4 / 4.5: five-fold CV, multi-label classification, emotions / scene.
table-4-4: install
	$(CV) $(call algoflags,$(T44_ALGOS)) --dataset emotions --task multilabel
	$(call tables,table-4-4,--dataset emotions --task multilabel --where missing=0 --where discard=false $(ML_METRICS))

table-4-5: install
	$(CV) $(call algoflags,$(T44_ALGOS)) --dataset scene --task multilabel
	$(call tables,table-4-5,--dataset scene --task multilabel --where missing=0 --where discard=false $(ML_METRICS))

# Table 4.6: recovering 10-30 % hidden labels (error rate), emotions and scene.
table-4-6: install
	for d in emotions scene; do for m in $(MISSING_FRACTIONS); do \
	  $(CV) $(call algoflags,$(T46_ALGOS)) --dataset $$d --task missing --missing $$m || exit 1; done; done
	$(call tables,table-4-6,--task missing $(foreach a,$(call algos,$(T46_ALGOS)),--algo $(a)) --metric error)
	$(PLOT) --task missing $(foreach a,$(call algos,$(T46_ALGOS)),--algo $(a)) --metric error --out $(FIGOUT)/table-4-6

# Table 4.7: 30 % hidden training labels; BMR uses them, the "-D" variants discard partial rows.
table-4-7: install
	for d in emotions scene; do \
	  $(if $(call algos,$(T47_ALGOS)),$(CV) $(call algoflags,$(T47_ALGOS)) --dataset $$d --task multilabel --missing 0.3 || exit 1;) \
	  $(if $(call algos,$(T47D_ALGOS)),$(CV) $(call algoflags,$(T47D_ALGOS)) --dataset $$d --task multilabel --missing 0.3 --discard || exit 1;) \
	  true; done
	$(call tables,table-4-7,--task multilabel --where missing=0.3 --combine discard $(foreach a,$(call algos,$(T47_ALGOS) $(T47D_ALGOS)),--algo $(a)) $(ML_METRICS))

# Table 5.1: recovering hidden labels with PMA and its competitors, emotions and scene.
table-5-1: install
	for d in emotions scene; do for m in $(MISSING_FRACTIONS); do \
	  $(CV) $(call algoflags,$(T51_ALGOS)) --dataset $$d --task missing --missing $$m || exit 1; done; done
	$(call tables,table-5-1,--task missing $(foreach a,$(call algos,$(T51_ALGOS)),--algo $(a)) --metric error)
	$(PLOT) --task missing $(foreach a,$(call algos,$(T51_ALGOS)),--algo $(a)) --metric error --out $(FIGOUT)/table-5-1

# Figure 5.2: PMA against GPR over rows (GPR-D1) and columns (GPR-D2) on PMA draws (squared error).
fig-5-2: install
	for d in synthetic-pma-50x20 synthetic-pma-50x50; do for m in 0.1 0.2 0.3 0.4 0.5; do \
	  $(CV) $(call algoflags,$(F52_ALGOS)) --param axis=rows,columns --dataset $$d --task missing --missing $$m || exit 1; done; done
	$(PLOT) --dataset synthetic-pma-50x20 --dataset synthetic-pma-50x50 --metric rmse --out $(FIGOUT)/fig-5-2
	$(call tables,fig-5-2,--dataset synthetic-pma-50x20 --dataset synthetic-pma-50x50 --metric rmse)

# Figure 3.4: graph-based semi-supervised learning with 30 labelled points.
fig-3-4: install
	for d in $(F34_DATASETS); do \
	  $(CV) $(call algoflags,$(F34_ALGOS)) --dataset $$d --task semisupervised --labeled 30 || exit 1; done
	$(call tables,fig-3-4,--task semisupervised --where labeled=30 --across-datasets)
	$(PLOT) --task semisupervised --where labeled=30 --out $(FIGOUT)/fig-3-4
