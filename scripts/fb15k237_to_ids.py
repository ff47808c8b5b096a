#!/usr/bin/env python3
"""Converts a FB15k-237 split to integer triples for dae-sim's knowledge-graph workloads.

Usage: python3 scripts/fb15k237_to_ids.py DATASET_DIR SPLIT.txt OUT.tsv

DATASET_DIR holds entities.dict and relations.dict (`<id>\t<string>` lines: the dense ids of
DeepGraphLearning/KnowledgeGraphEmbedding) and the split (`<head_mid>\t<relation>\t<tail_mid>`
lines, CRLF). OUT.tsv gets one `<head_id>\t<relation_id>\t<tail_id>` line per triple, LF, in the
split's order. Every string must be in the dictionaries; anything else is an error naming the
line.
"""
import sys


def read_dict(path):
    ids = {}
    with open(path, encoding="utf-8", newline="") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            num, name = line.split("\t")
            if name in ids:
                sys.exit(f"{path}:{n}: {name} appears twice")
            ids[name] = int(num)
    if sorted(ids.values()) != list(range(len(ids))):
        sys.exit(f"{path}: ids are not 0..{len(ids) - 1}")
    return ids


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    root, split, out = sys.argv[1:]
    entities = read_dict(f"{root}/entities.dict")
    relations = read_dict(f"{root}/relations.dict")
    rows = []
    with open(f"{root}/{split}", encoding="utf-8", newline="") as f:
        for n, line in enumerate(f, 1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 3:
                sys.exit(f"{split}:{n}: {len(fields)} fields, expected 3")
            h, r, t = fields
            try:
                rows.append((entities[h], relations[r], entities[t]))
            except KeyError as e:
                sys.exit(f"{split}:{n}: {e} is not in the dictionaries")
    with open(out, "w", encoding="ascii", newline="\n") as f:
        for h, r, t in rows:
            f.write(f"{h}\t{r}\t{t}\n")
    print(f"{out}: {len(rows)} triples, {len(entities)} entities, {len(relations)} relations")


if __name__ == "__main__":
    main()
