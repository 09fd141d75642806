package lint

import "strings"

// RequestPastTense names the rule that judges request keys: the past-tense
// rule in reverse.
const RequestPastTense = "request-past-tense"

// checkRequestTense reports a request whose key ends in a past tense
// ("stock.reserved"): a request asks for something to be done, so one
// named for what happened is a fact in disguise.
func checkRequestTense(p *pass) {
	for _, r := range p.in.Schemas.Requests {
		if verb, past := requestVerbIsPast(r.Key); past {
			p.report(r.Doc, "/x-request", "request key %q ends in %q, a past tense: a request asks for something to be done, in the imperative (\"pricing.quote\"); a key that states what happened is a fact in disguise: declare it with x-routing-key", r.Key, verb)
		}
	}
}

// requestVerbIsPast returns the verb of a request key (its last word, or
// the word before a trailing particle or version) and whether it reads as
// a past tense.
func requestVerbIsPast(key string) (string, bool) {
	segments := strings.Split(key, ".")
	if len(segments) > 1 && versionWord.MatchString(segments[len(segments)-1]) {
		segments = segments[:len(segments)-1]
	}
	k := splitKey(segments)
	v := len(k.words) - 1
	if v > 0 && particles[k.words[v].text] {
		v--
	}
	verb := k.words[v].text
	return verb, isPastTense(verb)
}
