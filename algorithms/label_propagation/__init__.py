"""Graph-based semi-supervised learning (dissertation chapter 3): GF, TIKREG, LGC, LNP, CK,
GWEM and the embedding-based label propagation family (LELP, LLELP, LTSALP and their
constrained variants). The maths is in `methods` and `graph`; `registered` holds thin wrappers."""
