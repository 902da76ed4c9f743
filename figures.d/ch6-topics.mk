# Dissertation ch. 6: Correlated and Gaussian Process Topic Models (five-fold held-out documents, 3 topics).

T62_DATASETS = different100 similar100 same100
GPTM_VARIANTS = --param kernel=identity,knn,mustlink --param sigma=learned,identity

FIGURES_ALL += table-6-2 table-6-6 table-6-3-5
.PHONY: table-6-2 table-6-6 table-6-3-5

# Tables 6.2 and 6.6: CTM vs GPTM (𝒦_ML, 𝒦_NN with k = 10) and the variants SI-KI, KI, SI, GPTM
# (conditional perplexity 6.24 for the CTM comparison, joint perplexity 6.23 for the variants).
table-6-2: install
	for d in $(T62_DATASETS); do \
	  $(if $(call algos,ctm),$(CV) --algo ctm --dataset $$d --task topics || exit 1;) \
	  $(if $(call algos,gptm),$(CV) --algo gptm $(GPTM_VARIANTS) --dataset $$d --task topics || exit 1;) \
	  true; done
	$(call tables,table-6-2,--task topics $(foreach d,$(T62_DATASETS),--dataset $(d)) --metric perplexity_conditional --metric embedding_error)

table-6-6: table-6-2
	$(call tables,table-6-6,--task topics $(foreach d,$(T62_DATASETS),--dataset $(d)) --algo gptm --metric perplexity)

# Tables 6.3-6.5: top words of CTM and GPTM (𝒦_NN, 𝒦_ML) topics on News100 (10 topics).
table-6-3-5: install
	$(if $(call algos,ctm),$(CV) --algo ctm --param topics=10 --dataset news100 --task topics)
	$(if $(call algos,gptm),$(CV) --algo gptm --param topics=10 --param kernel=knn,mustlink --dataset news100 --task topics)
	$(call tables,table-6-3-5,--task topics --dataset news100 --metric perplexity --metric perplexity_conditional --metric embedding_error)
	$(BIN)/python -m malt.algorithms.topics.figures $(FIGREPO) --dataset news100 --out $(FIGOUT)/table-6-3-5-top-words.md
