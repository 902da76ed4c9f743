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
ALGOS_AVAILABLE ?= mllr mlsvm column-mean pmf bmr mlknn iblr ccml rf ecc clr
# Registered but slower, or still being written; add to ALGOS_AVAILABLE once quick enough.
ALGOS_PENDING   ?= gpr pma-map pma-gibbs pma-exact ilmc gf gwem lnp lgc tikreg ck ltsalp
ALGOS_ONLY ?=
# Targets run by figures-quick: those with at least one algorithm in ALGOS_AVAILABLE.
FIGURES_QUICK ?= table-4-4 table-4-5 table-4-6 table-4-7 table-5-1
# Each reproduction family adds its targets to FIGURES_ALL in its own fragment, figures.d/*.mk.
FIGURES_ALL   :=

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


include $(sort $(wildcard figures.d/*.mk))

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
