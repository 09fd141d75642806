// Package suggest finds the name a user most likely meant, for the "did
// you mean" part of an error message.
package suggest

import "strings"

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

// Slip returns the candidate that word is a slip of the keyboard away
// from, and whether there is one. It is stricter than [Closest], for
// words that may be meant as they are even when a candidate is near: a
// schema's keys, where a vendor's "x-request-id" is not warren's
// "x-request" misspelt, nor "note" the keyword "not". The allowance goes
// by the candidate's length: for up to four characters only a swap of two
// neighbours ("tpye"), one edit for up to eight ("requried"), two beyond
// ("x-routng-key"). A difference of case alone is always a slip. When
// several are equally near, the first in candidates wins.
func Slip(word string, candidates []string) (string, bool) {
	best, bestDist := "", -1
	for _, c := range candidates {
		if c == word {
			continue
		}
		d := 0
		if !strings.EqualFold(c, word) {
			d = distance(word, c)
			n := len([]rune(c))
			switch {
			case n <= 4 && (d != 1 || !swapped(word, c)):
				continue
			case n <= 8 && d > 1, d > 2:
				continue
			}
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, bestDist >= 0
}

// swapped reports whether a and b, one edit apart, differ by the swap of
// two neighbours rather than by a letter added, dropped or replaced.
func swapped(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	if len(ra) != len(rb) {
		return false
	}
	for i := 0; i+1 < len(ra); i++ {
		if ra[i] != rb[i] {
			return ra[i] == rb[i+1] && ra[i+1] == rb[i] && string(ra[i+2:]) == string(rb[i+2:])
		}
	}
	return false
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
