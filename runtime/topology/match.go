package topology

import "strings"

// TopicMatch reports whether an AMQP topic pattern matches a routing key:
// words are separated by '.', '*' matches exactly one word and '#' zero or
// more words, as a RabbitMQ topic exchange does.
func TopicMatch(pattern, key string) bool {
	return MatchWords(strings.Split(pattern, "."), strings.Split(key, "."))
}

// MatchWords is [TopicMatch] of a pattern and a key split into words, for
// callers that match one key against many patterns. It runs over the
// pattern once, keeping for every prefix of the key whether the pattern so
// far matches it: time in len(p)·len(k). Trying every split for each '#'
// instead took time exponential in the number of '#'s, and
// "#.#.#.#.#.#.#.#.#.#.x" in a manifest hung the generator.
func MatchWords(p, k []string) bool {
	cur := make([]bool, len(k)+1) // cur[j]: the pattern so far matches k[:j]
	next := make([]bool, len(k)+1)
	cur[0] = true
	for _, w := range p {
		next[0] = w == "#" && cur[0]
		for j := 1; j <= len(k); j++ {
			switch w {
			case "#": // zero words, or one more word for the same '#'
				next[j] = cur[j] || next[j-1]
			case "*":
				next[j] = cur[j-1]
			default:
				next[j] = cur[j-1] && k[j-1] == w
			}
		}
		cur, next = next, cur
	}
	return cur[len(k)]
}
