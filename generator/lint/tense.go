package lint

import (
	"fmt"
	"regexp"
	"strings"
)

// The past-tense rule works on the words of a routing key: the key split on
// '.', '-' and '_'. It is a heuristic, and an honest one: English has no
// marker that always tells a past tense apart, so the rule accepts a word
// only for a reason it can name and stays quiet when a word is ambiguous.
//
// A word is taken to be in the past tense when
//   - it is a known irregular past form ("built", "sent", "paid", "written"),
//     alone or after a common verb prefix ("rebuilt", "prepaid", "undone");
//   - it ends in "ed" and is not one of the few words that only look past
//     ("need", "speed", "embed", "hundred"; see notPast).
//
// Irregular verbs whose present and past forms are spelt alike ("set",
// "reset", "read", "cut", "put") are accepted: "config.reset" may be the
// fact that a configuration was reset, and a linter that guesses wrong gets
// switched off. A trailing particle is skipped, so that the verb of
// "user.signed_up" or "session.timed-out" is what gets judged. Forms that
// are mostly nouns in routing keys are left out of
// the table ("cost", "output", "bid", "forecast"): "order.cost" is a value,
// not an event. A trailing version word ("order.placed.v2") is skipped.
//
// When the key is not in the past tense, the rule says why, and where it can
// suggests a better key:
//   - the last word is a known verb: "order.cancel" -> "order.cancelled";
//   - an earlier word is a known verb that is not also a common noun, so
//     the key is an imperative such as "rebuild.index": the verb moves to
//     the end in the past tense, "index.rebuilt" ("order.cancel" is not an
//     imperative: "order" is a noun too, see nounToo);
//   - otherwise the last word is a noun or a state ("order.status") and no
//     suggestion is made.

// irregularPast lists irregular past forms, simple past and past participle
// alike, so that "wrote" and "written" are both accepted.
var irregularPast = setOf(
	"arisen", "arose", "awoke", "awoken", "been", "began", "begun", "bent",
	"bitten", "bled", "blew", "blown", "bore", "born", "borne",
	"bought", "bound", "bred", "broadcast", "broke", "broken", "brought",
	"built", "burnt", "burst", "came", "caught", "chose", "chosen",
	"clung", "come", "crept", "cut", "dealt", "did", "done", "drank",
	"drawn", "dreamt", "drew", "driven", "drove", "drunk", "dug", "dwelt",
	"eaten", "fallen", "fed", "felt", "fell", "fled", "flew", "flown",
	"forbade", "forbidden", "forgave", "forgiven", "forgot",
	"forgotten", "fought", "found", "froze", "frozen", "gave", "given",
	"gone", "got", "gotten", "grew", "grown", "had", "heard",
	"held", "hid", "hidden", "hung", "hurt", "kept", "knelt",
	"knew", "known", "laid", "lain", "leapt", "learnt", "led", "left",
	"lent", "let", "lit", "lost", "made", "meant", "met", "paid",
	"put", "quit", "ran", "rang", "read", "ridden", "risen", "rode", "rose",
	"rung", "said", "sang", "sank", "sat", "saw", "seen", "sent", "set",
	"sewn", "shaken", "shed", "shone", "shook", "shot", "shown", "shrank",
	"shrunk", "shut", "slept", "slid", "sold", "sought", "spat", "sped",
	"spent", "spilt", "split", "spoke", "spoken", "sprang",
	"sprung", "spun", "stank", "stole", "stolen", "stood", "struck", "stuck",
	"stung", "sung", "sunk", "swept", "swore", "sworn", "swum", "swung",
	"taken", "taught", "tore", "torn", "thought", "threw", "thrown", "told",
	"took", "trod", "trodden", "understood", "undid", "upheld", "wed",
	"went", "wept", "withdrawn", "withdrew", "woke", "woken", "won", "wore",
	"worn", "wove", "woven", "written", "wrote", "wrung",
)

// pastPrefixes may precede an irregular past form: "re"+"built",
// "pre"+"paid", "over"+"written".
var pastPrefixes = []string{"back", "co", "de", "dis", "fore", "mis", "out", "over", "pre", "re", "sub", "un", "under", "up", "with"}

// notPast lists words that end in "ed" without being a past tense.
var notPast = setOf(
	"bed", "bleed", "breed", "creed", "deed", "embed", "exceed", "feed",
	"greed", "heed", "hundred", "kindred", "naked", "need", "proceed", "red",
	"reed", "sacred", "seed", "shred", "sled", "speed", "steed", "succeed",
	"wicked", "weed",
)

// verbPast maps verbs that commonly open or end a command-like routing key
// to the past form a fact would use. It feeds suggestions only; a verb not
// listed here is still flagged, just without a suggestion.
var verbPast = map[string]string{
	"accept": "accepted", "activate": "activated", "add": "added",
	"allocate": "allocated", "apply": "applied", "approve": "approved",
	"archive": "archived", "assign": "assigned", "authorize": "authorized",
	"begin": "begun", "bill": "billed", "block": "blocked", "book": "booked",
	"build": "built", "buy": "bought", "calculate": "calculated",
	"cancel": "cancelled", "capture": "captured", "charge": "charged",
	"check": "checked", "close": "closed", "commit": "committed",
	"complete": "completed", "compute": "computed", "confirm": "confirmed",
	"create": "created", "deactivate": "deactivated", "delete": "deleted",
	"deliver": "delivered", "deploy": "deployed", "disable": "disabled",
	"dispatch": "dispatched", "do": "done", "drop": "dropped",
	"email": "emailed", "enable": "enabled", "enqueue": "enqueued",
	"execute": "executed", "expire": "expired", "export": "exported",
	"fail": "failed", "fetch": "fetched", "find": "found", "finish": "finished",
	"freeze": "frozen", "fulfil": "fulfilled", "fulfill": "fulfilled",
	"generate": "generated", "get": "got", "give": "given", "import": "imported",
	"index": "indexed", "insert": "inserted", "invite": "invited",
	"invoice": "invoiced", "issue": "issued", "load": "loaded", "lock": "locked",
	"login": "logged-in", "logout": "logged-out", "make": "made",
	"merge": "merged", "migrate": "migrated", "modify": "modified",
	"move": "moved", "notify": "notified", "open": "opened", "order": "ordered",
	"pay": "paid", "place": "placed", "post": "posted", "process": "processed",
	"publish": "published", "purge": "purged", "read": "read",
	"rebuild": "rebuilt", "receive": "received", "recalculate": "recalculated",
	"refresh": "refreshed", "refund": "refunded", "register": "registered",
	"reindex": "reindexed", "reject": "rejected", "release": "released",
	"reload": "reloaded", "remove": "removed", "rename": "renamed",
	"renew": "renewed", "reserve": "reserved", "reset": "reset",
	"resend": "resent", "restart": "restarted", "restore": "restored",
	"resume": "resumed", "retry": "retried", "return": "returned", "roll": "rolled",
	"revoke": "revoked", "save": "saved", "schedule": "scheduled",
	"sell": "sold", "send": "sent", "set": "set", "ship": "shipped",
	"sign": "signed", "signup": "signed-up", "start": "started", "stop": "stopped",
	"store": "stored", "submit": "submitted", "subscribe": "subscribed",
	"suspend": "suspended", "sync": "synced", "take": "taken",
	"transfer": "transferred", "trigger": "triggered", "unlock": "unlocked",
	"unsubscribe": "unsubscribed", "update": "updated", "upgrade": "upgraded",
	"upload": "uploaded", "upsert": "upserted", "validate": "validated",
	"verify": "verified", "void": "voided", "write": "written",
}

// particles complete a phrasal verb: "signed up", "logged in", "rolled
// back". When a key ends in one, the word before it is the verb.
var particles = setOf("away", "back", "down", "in", "off", "on", "out", "over", "through", "up")

// versionWord matches a trailing version segment such as "v2".
var versionWord = regexp.MustCompile(`^v[0-9]+$`)

// isPastTense reports whether word, lower-case, reads as a past tense.
func isPastTense(word string) bool {
	if irregularPast[word] {
		return true
	}
	for _, p := range pastPrefixes {
		if rest, ok := strings.CutPrefix(word, p); ok && irregularPast[rest] {
			return true
		}
	}
	return len(word) >= 4 && strings.HasSuffix(word, "ed") && !notPast[word]
}

// nounToo lists verbs in verbPast that are just as often nouns ("order",
// "index", "email"). Such a word opening a key names a thing, not an
// instruction, so only a verb outside this set marks a key as a command.
var nounToo = setOf(
	"bill", "block", "book", "charge", "check", "deploy", "email", "export", "import",
	"index", "invoice", "issue", "load", "lock", "login", "logout", "order",
	"post", "process", "refund", "release", "return", "schedule", "ship",
	"sign", "signup", "store", "sync", "transfer", "trigger", "update",
	"upload", "void",
)

// pastTenseProblem returns "" when the routing key states something that
// happened, and otherwise a message saying what is wrong and, where the
// verb is known, which key would say it as a fact.
func pastTenseProblem(key string) string {
	segments := strings.Split(key, ".")
	// A trailing version segment says nothing about tense.
	if len(segments) > 1 && versionWord.MatchString(segments[len(segments)-1]) {
		segments = segments[:len(segments)-1]
	}
	k := splitKey(segments)
	// The verb of a phrasal verb comes before its particle: "signed_up".
	v := len(k.words) - 1
	if v > 0 && particles[k.words[v].text] {
		v--
	}
	verb := k.words[v].text
	if isPastTense(verb) {
		return ""
	}
	for i, w := range k.words[:v] {
		if past, ok := verbPast[w.text]; ok && !nounToo[w.text] {
			return fmt.Sprintf("routing key %q reads as a command (%q ...); a fact states what happened, e.g. %q", key, w.text, k.moveToEnd(i, past))
		}
	}
	if past, ok := verbPast[verb]; ok {
		return fmt.Sprintf("routing key %q ends in the verb %q, which asks for something to be done; a fact states what happened, e.g. %q", key, verb, k.replace(v, past))
	}
	return fmt.Sprintf("routing key %q should end in a verb in the past tense, and %q is not one; a fact states what happened, e.g. \"order.placed\"", key, verb)
}

// word is one word of a routing key with the separator that follows it
// ("." between segments, "-" or "_" inside one; "" after the last word).
type word struct{ text, sep string }

// keyWords is a routing key split into words.
type keyWords struct{ words []word }

// splitKey splits routing-key segments into words, remembering separators
// so that a suggestion keeps the author's spelling.
func splitKey(segments []string) keyWords {
	var k keyWords
	for si, seg := range segments {
		start := 0
		for i, r := range seg {
			if r == '-' || r == '_' {
				k.words = append(k.words, word{seg[start:i], string(r)})
				start = i + 1
			}
		}
		sep := "."
		if si == len(segments)-1 {
			sep = ""
		}
		k.words = append(k.words, word{seg[start:], sep})
	}
	return k
}

// moveToEnd rewrites the key with word i removed and past appended in its
// place at the end: "rebuild.index" -> "index.rebuilt",
// "catalogue.rebuild-index" -> "catalogue.index-rebuilt". The new last word
// joins with the separator that followed the removed verb.
func (k keyWords) moveToEnd(i int, past string) string {
	var b strings.Builder
	last := len(k.words) - 1
	for j, w := range k.words {
		switch j {
		case i:
		case last:
			b.WriteString(w.text)
			b.WriteString(k.words[i].sep)
		default:
			b.WriteString(w.text)
			b.WriteString(w.sep)
		}
	}
	b.WriteString(past)
	return b.String()
}

// replace rewrites the key with word i replaced.
func (k keyWords) replace(i int, text string) string {
	var b strings.Builder
	for j, w := range k.words {
		if j == i {
			b.WriteString(text)
		} else {
			b.WriteString(w.text)
		}
		b.WriteString(w.sep)
	}
	return b.String()
}

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
