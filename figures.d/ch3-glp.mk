# Dissertation ch. 3: graph-based semi-supervised learning.

F34_ALGOS = gf gwem lnp lgc tikreg ck ltsalp
F34_DATASETS ?= hepatitis breast-cancer wine iris glass pima usps letter-ef

FIGURES_ALL += fig-3-4
.PHONY: fig-3-4

# Figure 3.4: graph-based semi-supervised learning with 30 labelled points.
fig-3-4: install
	for d in $(F34_DATASETS); do \
	  $(CV) $(call algoflags,$(F34_ALGOS)) --dataset $$d --task semisupervised --labeled 30 || exit 1; done
	$(call tables,fig-3-4,--task semisupervised --where labeled=30 --across-datasets)
	$(PLOT) --task semisupervised --where labeled=30 --out $(FIGOUT)/fig-3-4
