"""Named MULAN multi-label datasets (emotions, scene, yeast, CAL500, enron, genbase).

Rows are the MULAN training file followed by the test file, so ``meta['given_train']`` rows form
the standard split (the multilabel task's ``split=given``); CAL500 ships no split.
"""
from __future__ import annotations

import numpy as np

from .arff import read_arff, read_label_names, split_features_labels
from .catalogue import DataRoots, DatasetEntry, Remote, register_dataset
from .dataset import Dataset

_MULAN = "https://raw.githubusercontent.com/tsoumakas/mulan/43f6389095ad71984264db4387a8074b22bc7d4a/data/multi-label"
_CITE = "MULAN (Tsoumakas et al., JMLR 12, 2011), github.com/tsoumakas/mulan @43f6389"

# name: (folder, mulan folder, [(file, sha256)], description, shape)
_SETS = {
    "emotions": ("emotions", "emotions", [
        ("emotions-train.arff", "bbe704106c79bb8fb99c1d1d2e9bde081d6a2daeb01f100862f11fd91a3c1f98"),
        ("emotions-test.arff", "f13d4b746b7b5c8eb484bd751d6ac463d4560dff998a93516a5c1fe35daf6c8f"),
        ("emotions.xml", "dbce8e6ccbbb2fcbfd9e9edbb230d7ed12692c6e13f59fdbc0161fa9b6cf2dc0")],
        "music clips tagged with emotions", "593 × 72, 6 labels"),
    "scene": ("scene", "scene", [
        ("scene-train.arff", "b53ba93bdf412de922e3960389bcee24744fa3e872ce610511fc1d750888b64d"),
        ("scene-test.arff", "ea38d20296b3ff7e220f477a3b802a9bcb2d768881fe6ee163efbc97ea527a42"),
        ("scene.xml", "55d8b247b949ad5c52e5a73d8c6775ec6e5469ce9682465b45b333b68ee4bcc5")],
        "natural scene images", "2407 × 294, 6 labels"),
    "yeast": ("yeast", "yeast", [
        ("yeast-train.arff", "e759dc991ff54694a4ff9c4314f3be0d6fd2b1994a4b563f57e416394c6aebbd"),
        ("yeast-test.arff", "4aaac102bff9669a765bf0b378602e5cc8c3b181048282e2f003117b496d552a"),
        ("yeast.xml", "c3056cc26444b5158b1588d1b73bec9c45429e10f0957ad085903423cb81f247")],
        "yeast gene functional classes", "2417 × 103, 14 labels"),
    "cal500": ("CAL500", "cal500", [
        ("cal500.arff", "cfe6097ba5fd6e8584e54911ab9783dcab34e898446b7c9370c71d477eae56d3"),
        ("cal500.xml", "877e128531268d7661faa3e44f7bb43cbcda829c0895e49879168775b192728c")],
        "songs annotated with 174 tags", "502 × 68, 174 labels"),
    "enron": ("enron", "enron", [
        ("enron-train.arff", "2988cefc1cdf7a8004a20ef84615cc8fa1b5d7434c16687283b41454e2d9d194"),
        ("enron-test.arff", "2f3aad54a8f54caaab4ab01246fe9dd385ba944a2633028f52747b57eac5474e"),
        ("enron.xml", "ed40c92d7f613eed51714912cab10dddc4ce456262137d8fef230d44c7f4457b")],
        "Enron e-mails, bag of words (sparse ARFF)", "1702 × 1001, 53 labels"),
    "genbase": ("genbase", "genbase", [
        ("genbase-train.arff", "37670db2c2b308a1c163d05501819526f1d65d659638ddfb76812d4ce384b5c6"),
        ("genbase-test.arff", "0e988520bedab39aa3f23f08f646c769bcdb6f9119ee298fd92b37127b226a36"),
        ("genbase.xml", "198e8a1d7070e9603119e02e626cedc589db7577339b307b06f5192047b69eb9")],
        "protein families (nominal motif features)", "662 × 1186, 27 labels"),
}


def load_mulan(name: str, arff_paths: list, xml_path, meta: dict | None = None) -> Dataset:
    """Read one or more ARFF files with a shared XML label header into a Dataset (X, Y)."""
    labels = read_label_names(xml_path)
    parts = []
    for path in arff_paths:
        attributes, data, relation = read_arff(path)
        parts.append(split_features_labels(attributes, data, labels, str(path)))
    X = np.vstack([p[0] for p in parts])
    Y = np.vstack([p[1] for p in parts])
    info = {"label_names": labels, "feature_names": parts[0][2], "source_files": [str(p) for p in arff_paths]}
    if len(parts) == 2:
        info["given_train"] = int(parts[0][0].shape[0])
    info.update(meta or {})
    return Dataset(name, {"X": X, "Y": Y}, info)


def _make_loader(name, folder, files):
    def load(roots: DataRoots) -> Dataset:
        arffs = [roots.path(f"multilabel/{folder}/{f}") for f, _ in files if f.endswith(".arff")]
        xml = roots.path(f"multilabel/{folder}/{files[-1][0]}")
        return load_mulan(name, arffs, xml)

    return load


for _name, (_folder, _mfolder, _files, _desc, _shape) in _SETS.items():
    register_dataset(DatasetEntry(
        name=_name,
        loader=_make_loader(_name, _folder, _files),
        description=_desc,
        shape=_shape,
        source=_CITE,
        files=tuple(f"multilabel/{_folder}/{f}" for f, _ in _files),
        remotes=tuple(Remote(f"{_MULAN}/{_mfolder}/{f}", f"multilabel/{_folder}/{f}", sha) for f, sha in _files),
        tasks=("multilabel", "missing"),
        group="multi-label (MULAN)",
    ))
