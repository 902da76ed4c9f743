# Dissertation ch. 3: graph-based semi-supervised learning (GLP family).
# The thesis's protocol (§3.6) as the default of every target here:
#  * five-fold semi-supervised CV (task `semisupervised`, option `labeled`); all points in the graph;
#  * GLP_TASK = stratify=True evaluate=unlabeled (task options, set here, not the task's defaults) on
#    every target of the chapter, UCI and text (fig-3-1 .. fig-3-7, fig-3-4-scaled, fig-3-2,
#    fig-3-*-text): each fold's l labelled points are drawn per class in proportion to the four
#    training folds, and the error is counted over every unlabelled point (n − l), not over the
#    held-out fold. §3.6 says "the test error was measured on the fifth fold", but its numbers are
#    not held-out-fold numbers: its Hepatitis TIKREG/CK at l = 30 are 20.8 ± 0.0 = 26/125 on all five
#    folds (the minority share of the 125 unlabelled points when 6 of 30 labelled are DIE; a 31-point
#    fold cannot give 20.8 %), and its fold stds are at the level of this protocol's, not of a
#    held-out fold's: our fold std / the thesis's, median over the 49 cells of the seven smaller UCI
#    sets (seed 0; figures.d/ch3-glp-cells.md), Figures 3.4 / 3.5 / 3.6: held-out fold 1.9 / 2.5 / 2.5,
#    stratified held-out fold 2.6 (3.6 only), unlabelled points 1.3 / 1.5 / 1.5, stratified +
#    unlabelled points 1.10 / 1.08 / 1.26. (Cells inside mean ± 2·std, same 49 cells: 37 / 41 / 41
#    held-out fold, 43 / 42 / 41 here.) On the 126 text cells (figures.d/ch3-glp-text.md, seed 0) the
#    same ratio is 0.84 / 0.88 / 0.86 here against 1.23 / 1.41 / 1.58 held-out fold, and 65 of 126 cells
#    are inside against 81: with the fold noise gone the mean gaps stand out; every cell outside has its
#    measured reason, or is listed as unexplained, there.
#    GLP_TASK= runs the task's defaults (held-out fold, unstratified draw). Tables filter on the
#    options GLP_TASK names, so a FIGREPO that also holds another protocol's runs needs both named
#    (e.g. GLP_TASK='stratify=False evaluate=unlabeled'). `stratify_folds=True` (folds assigned per
#    class) puts the Hepatitis majority baseline at exactly the thesis's TIKREG/CK 20.8 ± 0.0; it is
#    not in GLP_TASK (46/46/44 → 44/41/44 UCI cells inside; ch3-glp-cells.md, R3);
#  * one kNN graph per dataset from malt.numerics.graphs: union-symmetrised ("(x_i, x_j) ∈ E whenever
#    (x_j, x_i) ∈ E", the thesis's own kNN rule, §6.4), RBF weights exp(-d²/2σ²) with σ the median
#    kNN distance on UCI sets; cosine kNN with cosine-similarity weights on the tf-idf text sets
#    (TEXT_PARAMS: metric=cosine weight=similarity; datasets/text.py TFIDF pipeline version 2, as the
#    thesis's source [65]: every Usenet header dropped (Subject too), stop words, no stemming, df in
#    [max(2, 0.2 %), 15 %], tf·log(n/df), unit rows; posts left empty dropped, since an empty row
#    would be every document's cosine neighbour); figures.d/ch3-glp-text.md has the text cells;
#  * every method's parameters chosen by 5-fold inner CV on the labelled points only
#    (GLP_PARAMS: select=inner-cv, malt.numerics.selection; k from k_grid = 10,5,20,3 and each method's own
#    <name>_grid at its defaults: α for lgc/lnp, γ for tikreg, walk length for gwem, embedding size
#    and SVM C for ck (an RBF-kernel SVM, as the thesis), the local tangent dimension for ltsalp).
#    select=inner-cv and this k_grid are settings of these targets, not the algorithms' defaults
#    (those stay select=none, k = 10: one fit per unit). LNP solves the fixed point of eq. 3.19
#    directly (its default; solver=iterate runs the thesis's sweeps to the same answer);
#  * unscaled UCI features, as the thesis used them (its ~30 % Wine errors are those of the unscaled
#    features, dominated by proline); fig-3-4-scaled repeats Figure 3.4 with standardised features;
#  * the thesis's "Cancer" row is the Wisconsin *diagnostic* set (WDBC, 569 × 30, unscaled:
#    sklearn-breast-cancer), not the 699 × 9 original set `breast-cancer`: on WDBC 20 of its 21 cells
#    of Figures 3.4-3.6 lie within the thesis's mean ± 2·std, on the original set 2 of 7 at l = 50
#    (every method 3-6 %, the thesis 8.4-11.3 %); figures.d/ch3-glp-cells.md has the measurements.
#    Every Cancer row of this chapter (Figures 3.1, 3.3-3.6, fig-3-4-scaled) uses it;
#  * `majority` (the most frequent labelled class everywhere) runs beside the seven methods as the
#    trivial baseline of every row (the thesis's CK cells on Pima and Hepatitis sit at its error).
# GLP_PARAMS= runs the algorithms' defaults instead. CVFLAGS=--jobs=2 runs two units at a time.

F34_ALGOS = gf gwem lnp lgc tikreg ck ltsalp
F34_BASELINES = majority
F33_ALGOS = lelp lelpc llelp llelpc ltsalp ltsalpc
F37_ALGOS = lelp llelp ltsalp
F34_DATASETS ?= hepatitis sklearn-breast-cancer wine iris glass pima usps-1234 letter-ef
F33_DATASETS ?= wine2 hepatitis sklearn-breast-cancer pima letter-ef
TEXT_DATASETS ?= different100 similar100 same100 different1000 same1000 classic3
F31_DATASETS ?= sklearn-breast-cancer pima glass wine usps-1234 letter-ef
F32_DATASETS ?= different100 similar100 same100 same1000 different1000 classic3
GLP_CURVE_LABELED ?= 10 20 30 40 50 60
GLP_LABELED = 30 40 50
GLP_K_GRID ?= 10,5,20,3
GLP_PARAMS ?= --param select=inner-cv --param k_grid=$(GLP_K_GRID)
GLP_TASK ?= stratify=True evaluate=unlabeled
TEXT_PARAMS = --param metric=cosine --param weight=similarity $(GLP_PARAMS)
SCALED_PARAMS = --param scale=standardize $(GLP_PARAMS)

FIGURES_ALL += fig-3-1 fig-3-2 fig-3-3 fig-3-4 fig-3-5 fig-3-6 fig-3-4-text fig-3-5-text fig-3-6-text fig-3-7 \
	fig-3-8 fig-3-4-scaled
.PHONY: fig-3-1 fig-3-2 fig-3-3 fig-3-4 fig-3-5 fig-3-6 fig-3-4-text fig-3-5-text fig-3-6-text fig-3-7 fig-3-8 \
	fig-3-4-scaled

# $(call glp_table,TARGET,LABELED,DATASETS,ALGOS,PARAMS[,BASELINES]): run and tabulate one l;
# BASELINES run at their defaults (no PARAMS: they have no graph and select nothing).
# TASK (optional) = task options name=value, as GLP_TASK: passed to every run (--task-param) and to the
# table (--where), so a table never picks up the same cells run under another protocol.
glp_run = for d in $(3); do \
	  $(CV) $(call algoflags,$(4)) --dataset $$d --task semisupervised --labeled $(2) $(call glp_task,$(7)) $(5) || exit 1; \
	  $(if $(call algos,$(6)),$(CV) $(call algoflags,$(6)) --dataset $$d --task semisupervised --labeled $(2) $(call glp_task,$(7)) || exit 1;) done
glp_table = $(call glp_run,$(1),$(2),$(3),$(4),$(5),$(6),$(7)) && \
	$(call tables,$(1),--task semisupervised --where labeled=$(2) $(call glp_where,$(7)) $(foreach d,$(3),--dataset $(d)) \
	  $(foreach a,$(call algos,$(4) $(6)),--algo $(a)) --across-datasets)
glp_task = $(foreach o,$(1),--task-param $(o))
glp_where = $(foreach o,$(1),--where $(o))

# Figures 3.4-3.6: the seven methods with l = 30 / 40 / 50 labelled points, UCI sets.
fig-3-4: install
	$(call glp_table,fig-3-4,30,$(F34_DATASETS),$(F34_ALGOS),$(GLP_PARAMS),$(F34_BASELINES),$(GLP_TASK))
	$(PLOT) --task semisupervised --where labeled=30 $(call glp_where,$(GLP_TASK)) $(foreach d,$(F34_DATASETS),--dataset $(d)) \
	  --out $(FIGOUT)/fig-3-4
fig-3-5: install
	$(call glp_table,fig-3-5,40,$(F34_DATASETS),$(F34_ALGOS),$(GLP_PARAMS),$(F34_BASELINES),$(GLP_TASK))
fig-3-6: install
	$(call glp_table,fig-3-6,50,$(F34_DATASETS),$(F34_ALGOS),$(GLP_PARAMS),$(F34_BASELINES),$(GLP_TASK))

# The same on the text sets (the thesis's rows Dif100 ... Classic3 of Figures 3.4-3.6): the same
# protocol (GLP_TASK), the cosine graph (TEXT_PARAMS), and the majority baseline (the thesis's CK
# cells on Sim100, Same100, Dif1000, Same1000 sit at its error).
fig-3-4-text: install
	$(call glp_table,fig-3-4-text,30,$(TEXT_DATASETS),$(F34_ALGOS),$(TEXT_PARAMS),$(F34_BASELINES),$(GLP_TASK))
fig-3-5-text: install
	$(call glp_table,fig-3-5-text,40,$(TEXT_DATASETS),$(F34_ALGOS),$(TEXT_PARAMS),$(F34_BASELINES),$(GLP_TASK))
fig-3-6-text: install
	$(call glp_table,fig-3-6-text,50,$(TEXT_DATASETS),$(F34_ALGOS),$(TEXT_PARAMS),$(F34_BASELINES),$(GLP_TASK))

# Figure 3.3: the six embedding-based methods on the two-class sets, l = 30, 40, 50, with `majority`
# beside them (figures.d/ch3-glp-embedding.md has the thesis's claims beside these tables).
fig-3-3: install
	for l in $(GLP_LABELED); do $(call glp_run,fig-3-3,$$l,$(F33_DATASETS),$(F33_ALGOS),$(GLP_PARAMS),$(F34_BASELINES),$(GLP_TASK)); done
	$(call tables,fig-3-3-l30,--task semisupervised --where labeled=30 $(call glp_where,$(GLP_TASK)) $(foreach d,$(F33_DATASETS),--dataset $(d)) \
	  $(foreach a,$(call algos,$(F33_ALGOS) $(F34_BASELINES)),--algo $(a)) --across-datasets)
	$(call tables,fig-3-3-l40,--task semisupervised --where labeled=40 $(call glp_where,$(GLP_TASK)) $(foreach d,$(F33_DATASETS),--dataset $(d)) \
	  $(foreach a,$(call algos,$(F33_ALGOS) $(F34_BASELINES)),--algo $(a)) --across-datasets)
	$(call tables,fig-3-3-l50,--task semisupervised --where labeled=50 $(call glp_where,$(GLP_TASK)) $(foreach d,$(F33_DATASETS),--dataset $(d)) \
	  $(foreach a,$(call algos,$(F33_ALGOS) $(F34_BASELINES)),--algo $(a)) --across-datasets)

# Figures 3.1 / 3.2: test error as increasingly many points are labelled (curves over l),
# UCI sets / text sets (the thesis does not list its l grid; we use GLP_CURVE_LABELED).
fig-3-1: install
	for l in $(GLP_CURVE_LABELED); do $(call glp_run,fig-3-1,$$l,$(F31_DATASETS),$(F34_ALGOS),$(GLP_PARAMS),,$(GLP_TASK)); done
	$(PLOT) --task semisupervised $(call glp_where,$(GLP_TASK)) $(foreach d,$(F31_DATASETS),--dataset $(d)) \
	  $(foreach a,$(call algos,$(F34_ALGOS)),--algo $(a)) --metric error --out $(FIGOUT)/fig-3-1
fig-3-2: install
	for l in $(GLP_CURVE_LABELED); do $(call glp_run,fig-3-2,$$l,$(F32_DATASETS),$(F34_ALGOS),$(TEXT_PARAMS),,$(GLP_TASK)); done
	$(PLOT) --task semisupervised $(call glp_where,$(GLP_TASK)) $(foreach d,$(F32_DATASETS),--dataset $(d)) \
	  $(foreach a,$(call algos,$(F34_ALGOS)),--algo $(a)) --metric error --out $(FIGOUT)/fig-3-2

# Figure 3.7: the error rates beside Figure 3.8's embeddings (LELP, LLELP, LTSALP on Wine, l = 30), with `majority`.
# One dataset: glp_table's --across-datasets refuses a single experiment, so the table is Wine's own.
fig-3-7: install
	$(call glp_run,fig-3-7,30,wine,$(F37_ALGOS),$(GLP_PARAMS),$(F34_BASELINES),$(GLP_TASK))
	$(call tables,fig-3-7,--task semisupervised --where labeled=30 $(call glp_where,$(GLP_TASK)) --dataset wine \
	  $(foreach a,$(call algos,$(F37_ALGOS) $(F34_BASELINES)),--algo $(a)))

# Figure 3.8: unsupervised vs semi-supervised 1-D embeddings of Wine (LE, LLE, LTSA), PNG + PDF, with
# each panel's 1-D class-separation error (figures.d/scripts/fig_3_8.py; over ten labelled draws), at the
# figure's k = 10, LTSA tangent dimension 1, at k = 20, d = 4 (what inner CV picks for LTSALP on Wine), and
# with standardised features (the chapter's cells use unscaled ones).
fig-3-8: install
	mkdir -p $(FIGOUT) && MALT_DATA=$(FIGDATA) $(BIN)/python figures.d/scripts/fig_3_8.py --out $(FIGOUT) --draws 10
	MALT_DATA=$(FIGDATA) $(BIN)/python figures.d/scripts/fig_3_8.py --out $(FIGOUT) --draws 10 --k 20 --tangent-dim 4
	MALT_DATA=$(FIGDATA) $(BIN)/python figures.d/scripts/fig_3_8.py --out $(FIGOUT) --draws 10 --scale standardize

# Figure 3.4 with standardised features (the thesis's ~30 % Wine errors match unscaled features),
# in its own repository so the tables of the unscaled runs stay as printed.
SCALED_DATASETS ?= wine iris glass pima hepatitis sklearn-breast-cancer
fig-3-4-scaled: override FIGREPO := $(FIGREPO)-scaled
fig-3-4-scaled: install
	$(call glp_table,fig-3-4-scaled,30,$(SCALED_DATASETS),$(F34_ALGOS),$(SCALED_PARAMS),,$(GLP_TASK))
