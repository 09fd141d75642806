// Package suggest finds the name a user most likely meant, for the "did
// you mean" part of an error message.
package suggest

// Closest returns the candidate nearest to word, and whether one is near
// enough to suggest: at most one edit for words of up to four characters,
// two for up to eight, three beyond (an edit inserts, deletes or replaces a
// character, or swaps two neighbours, so "mialer" is one edit from
// "mailer"). When several are equally near, the first in candidates wins,
// so callers pass them in a stable order. A candidate equal to word is not
// a suggestion.
func Closest(word string, candidates []string) (string, bool) {
	best, bestDist := "", -1
	limit := maxEdits(len([]rune(word)))
	for _, c := range candidates {
		if c == word {
			continue
		}
		d := distance(word, c)
		if d <= limit && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best, bestDist >= 0
}

func maxEdits(n int) int {
	switch {
	case n <= 4:
		return 1
	case n <= 8:
		return 2
	}
	return 3
}

// distance is the optimal string alignment distance between a and b, in
// runes: Levenshtein plus the swap of two adjacent characters, the most
// common typing slip. The library in the module graph (smetrics) has no
// transpositions, and this is a dozen lines.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows: two back for the transposition, the previous, the current.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
