"""Speed of the lexicon filter (not a test).

200,000 synthetic short posts (8-30 words of everyday vocabulary; about one in eight carries a
lexicon term, some with curly apostrophes, capitals or a line break inside the phrase) are run
through `Lexicon.match` (one compiled alternation per lexicon) and through the loop a reader would
write: for every text, `re.search` with a precompiled, equally word-bounded pattern per term. Both
see the same apostrophe-normalised text. Reported: texts/s of each and the ratio, plus agreement of
"does the post match at all" between the two.

    python benchmarks/lexicon_speed.py [--n 200000] [--naive-n 200000] [--lexicon mh] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import re
import time

from mhaudit.weak_supervision.lexicons import Lexicon, normalise_apostrophes

WORDS = ("the a and i you we it was is to of in on for with my your this that just so really "
         "today tomorrow morning night coffee work school dog cat game music song movie friend "
         "weekend rain sun train bus late early new old great good bad funny weird love hate "
         "think know feel going got make made see saw watch read book city park beach dinner "
         "lunch pizza study studied diet skill sleepover dying dye panicked depress bluesky post").split()


def synthetic_posts(lexicon: Lexicon, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    terms = sorted(lexicon.terms)
    posts = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 30))]
        if rng.random() < 0.125:
            term = rng.choice(terms)
            if rng.random() < 0.3:
                term = term.replace("'", "\u2019")
            if rng.random() < 0.2:
                term = term.upper()
            if rng.random() < 0.1:
                term = term.replace(" ", "\n ", 1)
            words.insert(rng.randrange(len(words) + 1), term)
        posts.append(" ".join(words).capitalize() + rng.choice((".", "!", "", " 😭", "?")))
    return posts


def naive_patterns(lexicon: Lexicon) -> list[tuple[str, re.Pattern]]:
    return [(term, re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, term.split(" "))) + r"(?!\w)",
                              re.IGNORECASE))
            for term in lexicon.terms]


def naive_match(patterns, text: str) -> list[str]:
    text = normalise_apostrophes(text)
    return [term for term, pat in patterns if pat.search(text)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--naive-n", type=int, default=200_000)
    ap.add_argument("--lexicon", default="mh")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    lex = Lexicon.load(args.lexicon)
    posts = synthetic_posts(lex, args.n, args.seed)
    print(f"lexicon {lex.name} v{lex.version}: {len(lex)} terms, sha256 {lex.sha256[:16]}; {len(posts):,} posts")

    t0 = time.perf_counter()
    ours = [lex.match(p) for p in posts]
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    any_fast = sum(lex.matches_any(p) for p in posts)
    t_any = time.perf_counter() - t0

    patterns = naive_patterns(lex)
    sub = posts[: args.naive_n]
    t0 = time.perf_counter()
    naive = [naive_match(patterns, p) for p in sub]
    t_naive = time.perf_counter() - t0

    agree = sum(bool(a) == bool(b) for a, b in zip(ours, naive))
    rate_ours, rate_any, rate_naive = len(posts) / t_ours, len(posts) / t_any, len(sub) / t_naive
    print(f"matched posts: {sum(map(bool, ours)):,} ({sum(map(bool, ours)) / len(posts):.1%}); "
          f"matches_any agrees: {any_fast == sum(map(bool, ours))}")
    print(f"Lexicon.match        {rate_ours:12,.0f} texts/s  ({t_ours:.2f} s)")
    print(f"Lexicon.matches_any  {rate_any:12,.0f} texts/s  ({t_any:.2f} s)")
    print(f"naive loop (peer)    {rate_naive:12,.0f} texts/s  ({t_naive:.2f} s on {len(sub):,})")
    print(f"ratio match / naive: {rate_ours / rate_naive:.1f}x; any-match agreement {agree:,}/{len(sub):,}")


if __name__ == "__main__":
    main()
