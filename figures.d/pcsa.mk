# Shi (NIPS 2012), Bayesian Probabilistic Co-Subspace Addition: Figure 1 (hidden labels of the truncated
# log-odds matrices of Emotions and CAL500 against PMA-MAP), Table 2 (MovieLens 100K, 70 % of the
# ratings for training), Figures 2-3 (Frey / ORL face completion: nf complete images, half the pixels of
# the others hidden) and PCSA-3 on ORL as person × image × pixel.
# Both fills of the missing entries run side by side (fill=point is §3.1 as printed, fill=latent adds
# their variance 1/<tau> to the noise update); pma-map with the feature kernel (k1=rbf, the dissertation's
# PMA) and without features (k1=estimate: like PCSA it sees the label matrix only).

PCSA_ALGOS = pcsa pcsa-sparse
PCSA_FILLS ?= point,latent
PCSA_FOLDS ?= 10
PCSA_RUNS ?= 10
PCSA_FRACTIONS ?= 0.1 0.15 0.2 0.25 0.3 0.35 0.4 0.45 0.5
PCSA_F1_DATASETS ?= emotions cal500
PCSA_NF_FREY ?= 1000 600 200
PCSA_NF_ORL ?= 300 150 50
PCSA_FACE_FOLDS ?= 3
PCSA_PMA_K1 ?= rbf,estimate

FIGURES_ALL += figure-pcsa-1 table-pcsa-2 figure-pcsa-faces figure-pcsa-4 table-pcsa-tensor
.PHONY: figure-pcsa-1 table-pcsa-2 figure-pcsa-faces figure-pcsa-4 table-pcsa-tensor

# Figure 1: error rate of the recovered labels, 10 % .. 50 % missing, PCSA / sparse PCSA vs PMA-MAP.
figure-pcsa-1: install
	for d in $(PCSA_F1_DATASETS); do for m in $(PCSA_FRACTIONS); do \
	  $(CV) $(call algoflags,$(PCSA_ALGOS)) --param fill=$(PCSA_FILLS) --dataset $$d --task missing --missing $$m \
	    --folds $(PCSA_FOLDS) || exit 1; \
	  $(if $(call algos,pma-map),$(CV) --algo pma-map --param k1=$(PCSA_PMA_K1) --dataset $$d --task missing \
	    --missing $$m --folds $(PCSA_FOLDS) || exit 1;) done; done
	$(call tables,figure-pcsa-1,--task missing --dataset emotions --dataset cal500 --metric error)
	$(PLOT) --task missing --dataset emotions --dataset cal500 --metric error --out $(FIGOUT)/figure-pcsa-1

# Table 2: RMSE and MAE on MovieLens 100K, 70 % of the ratings for training, 10 random splits.
table-pcsa-2: install
	$(CV) $(call algoflags,$(PCSA_ALGOS)) --param fill=$(PCSA_FILLS) --dataset movielens-100k --task ratings \
	  --task-param runs=$(PCSA_RUNS) --task-param train_fraction=0.7
	$(call tables,table-pcsa-2,--task ratings --dataset movielens-100k --where train_fraction=0.7 --metric rmse --metric mae)

# Figures 2-3: correlation and MAE of the filled pixels; nf images fully observed, half the pixels of
# the others hidden (the protocol's nf = 0 end is Figure 4). Reconstructions: make figure-pcsa-4.
figure-pcsa-faces: install
	for nf in $(PCSA_NF_FREY); do $(CV) $(call algoflags,$(PCSA_ALGOS)) --dataset frey-faces --task missing \
	  --missing 0.5 --task-param complete_rows=$$nf --folds $(PCSA_FACE_FOLDS) || exit 1; done
	for nf in $(PCSA_NF_ORL); do $(CV) $(call algoflags,$(PCSA_ALGOS)) --dataset orl-faces --task missing \
	  --missing 0.5 --task-param complete_rows=$$nf --folds $(PCSA_FACE_FOLDS) || exit 1; done
	$(call tables,figure-pcsa-faces,--task missing --dataset frey-faces --dataset orl-faces --metric correlation --metric mae)
	$(PLOT) --task missing --dataset frey-faces --dataset orl-faces --metric correlation --metric mae \
	  --out $(FIGOUT)/figure-pcsa-faces

# Figure 4: reconstructions when every image has half its pixels hidden (nf = 0), Frey and ORL.
figure-pcsa-4: install
	mkdir -p $(FIGOUT)
	for d in frey-faces orl-faces; do MALT_DATA=$(FIGDATA) $(BIN)/python -m malt.algorithms.pcsa.faces reconstruct \
	  $$d $(FIGOUT)/figure-pcsa-4-$$d.png || exit 1; done

# §4.3 / Table 3 protocol on ORL (CMU PIE is not public): whole images missing from the person × image
# × pixel tensor, PCSA-3 against the person's mean image and matrix PCSA (CORR, MAE of filled images).
PCSA_TENSOR_RUNS ?= 3
table-pcsa-tensor: install
	mkdir -p $(FIGOUT)
	MALT_DATA=$(FIGDATA) $(BIN)/python -m malt.algorithms.pcsa.faces tensor $(FIGOUT)/table-pcsa-tensor.png \
	  $(PCSA_TENSOR_RUNS) | tee $(FIGOUT)/table-pcsa-tensor.md
