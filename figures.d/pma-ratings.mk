# pma-map on the ratings task beside the two standard baselines (issue 23; not in the dissertation, so
# FIGURES_ALL is unchanged): the default (sharpened moment kernels, bias penalties by inner CV, ranking
# from the zero-filled fit) and its ablations: the plain PSD-projected kernels (kernel_power=1)
# and ranking by the predicted ratings. 5 random 70/30 splits per dataset.
.PHONY: pma-ratings-ablation
PMA_RATINGS_DATA = movielens-100k filmtrust ciaodvd-trust

pma-ratings-ablation: install
	for d in $(PMA_RATINGS_DATA); do \
	  $(CV) --algo baseline --algo popularity --algo pma-map \
	    --param kernel_power=3,1 --param ranking=zero-filled,ratings --dataset $$d --task ratings || exit 1; done
	$(call tables,pma-ratings-ablation,--task ratings $(foreach d,$(PMA_RATINGS_DATA),--dataset $(d)) --algo baseline --algo popularity --algo pma-map --metric rmse --metric mae --metric recall@k)
