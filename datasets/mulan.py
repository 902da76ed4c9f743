"""MULAN multi-label data: ARFF files whose label attributes are named in an XML header file, and
the named MULAN datasets (emotions, scene, yeast, CAL500, enron, genbase).

Rows are the MULAN training file followed by the test file, so ``meta['given_train']`` rows form
the standard split (the multilabel task's ``split=given``); CAL500 ships no split. genbase's first
attribute, ``protein``, is the protein's accession number (a distinct value in every row): an
identifier, not a feature, so it is dropped.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from malt.errors import DataError

from .arff import Arff, feature_matrix, label_matrix, read_arff
from .catalogue import DataRoots, DatasetEntry, Remote, register_dataset
from .dataset import Dataset, check_labels
from .textfile import read_bytes

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
        "protein families (nominal motif features)", "662 × 1185, 27 labels"),
}


def read_label_names(xml_path: str | Path) -> list[str]:
    """Label names from a MULAN XML header (every <label name=...> element, document order, nested
    hierarchical labels included). Duplicated names are refused."""
    xml_path = Path(xml_path)
    raw = read_bytes(xml_path)
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as err:
        raise DataError(f"{xml_path}: not a readable MULAN label file (XML error: {err}).") from None
    names = [el.attrib.get("name") for el in root.iter() if el.tag.split("}")[-1] == "label"]
    if any(name is None for name in names):
        raise DataError(f"{xml_path}: a <label> element has no name attribute.")
    if not names:
        raise DataError(f"{xml_path}: no <label name=...> elements found; is this MULAN's XML label file?")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataError(f"{xml_path}: the label {name!r} is listed twice; each label must appear once.")
        seen.add(name)
    return names


def split_mulan(arff: Arff, label_names: list[str], drop: tuple[str, ...] = ()):
    """(X, Y, feature names): the label attributes by name, every other attribute (but ``drop``) a feature."""
    index = {name: j for j, name in enumerate(arff.names)}
    missing = [name for name in label_names if name not in index]
    if missing:
        close = [n for n in arff.names if n.replace("\\", "") == missing[0].replace("\\", "")]
        hint = f" (the ARFF has {close[0]!r})" if close else ""
        raise DataError(f"{arff.path}: label {missing[0]!r} named in the XML file is not an attribute of the ARFF "
                        f"file{hint}" + (f"; {len(missing) - 1} more labels are missing too." if len(missing) > 1
                                         else "."))
    label_cols = [index[name] for name in label_names]
    skip = set(label_cols) | {index[name] for name in drop if name in index}
    feature_cols = [j for j in range(len(arff.attributes)) if j not in skip]
    if not feature_cols:
        raise DataError(f"{arff.path}: every attribute is a label; the file has no features.")
    X, names = feature_matrix(arff, feature_cols)
    return X, label_matrix(arff, label_cols), names


def load_mulan(name: str, arff_paths: list, xml_path, meta: dict | None = None, drop: tuple[str, ...] = (),
               impute: str = "none") -> Dataset:
    """Read one or more ARFF files with a shared XML label header into a Dataset (X, Y); ``impute``
    'mean' fills missing feature values by column means."""
    labels = read_label_names(xml_path)
    parts, first = [], None
    for path in arff_paths:
        arff = read_arff(path)
        if first is None:
            first = arff
        elif arff.attributes != first.attributes:
            raise DataError(f"{path} declares other attributes than {first.path}; files of one dataset must "
                            "share their header.")
        parts.append(split_mulan(arff, labels, drop))
    X = np.vstack([p[0] for p in parts])
    Y = np.vstack([p[1] for p in parts])
    info = {"label_names": labels, "feature_names": parts[0][2], "source_files": [str(p) for p in arff_paths]}
    if impute != "none" or np.isnan(X).all(axis=0).any():
        from .delimited import impute_features

        X = impute_features(X, impute, info, Path(arff_paths[0]), parts[0][2])
    if drop:
        info["dropped_attributes"] = list(drop)
    if len(parts) == 2:
        info["given_train"] = int(parts[0][0].shape[0])
    info.update(meta or {})
    dataset = Dataset(name, {"X": X, "Y": Y}, info)
    check_labels(dataset, examples=False)
    return dataset


_DROP = {"genbase": ("protein",)}


def _make_loader(name, folder, files):
    def load(roots: DataRoots) -> Dataset:
        arffs = [roots.path(f"multilabel/{folder}/{f}") for f, _ in files if f.endswith(".arff")]
        xml = roots.path(f"multilabel/{folder}/{files[-1][0]}")
        return load_mulan(name, arffs, xml, drop=_DROP.get(name, ()))

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
