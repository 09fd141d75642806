package lint

import "testing"

func TestPastTense(t *testing.T) {
	tests := []struct {
		key  string
		want string // "" when the key passes
	}{
		{"catalogue.import-completed", ""},
		{"order.placed", ""},
		{"user.deleted", ""},
		{"email.sent", ""},
		{"image.built", ""},
		{"index.rebuilt", ""},     // prefix + irregular
		{"invoice.prepaid", ""},   // prefix + irregular
		{"report.written", ""},    // irregular participle
		{"payment.failed", ""},    // regular
		{"config.reset", ""},      // present and past spelt alike: accepted
		{"order.placed.v2", ""},   // trailing version word skipped
		{"user.signed_up", ""},    // phrasal verb: the particle is skipped
		{"session.timed-out", ""}, // phrasal verb
		{"user.sign_up", `routing key "user.sign_up" ends in the verb "sign", which asks for something to be done; a fact states what happened, e.g. "user.signed_up"`},
		{"deploy.roll-back", `routing key "deploy.roll-back" ends in the verb "roll", which asks for something to be done; a fact states what happened, e.g. "deploy.rolled-back"`},
		{"lights.on", `routing key "lights.on" should end in a verb in the past tense, and "lights" is not one; a fact states what happened, e.g. "order.placed"`},
		{"order.shipped_v2", `routing key "order.shipped_v2" should end in a verb in the past tense, and "v2" is not one; a fact states what happened, e.g. "order.placed"`},
		{"rebuild.index", `routing key "rebuild.index" reads as a command ("rebuild" ...); a fact states what happened, e.g. "index.rebuilt"`},
		{"send.email", `routing key "send.email" reads as a command ("send" ...); a fact states what happened, e.g. "email.sent"`},
		{"catalogue.rebuild-index", `routing key "catalogue.rebuild-index" reads as a command ("rebuild" ...); a fact states what happened, e.g. "catalogue.index-rebuilt"`},
		{"acme.send-welcome.email", `routing key "acme.send-welcome.email" reads as a command ("send" ...); a fact states what happened, e.g. "acme.welcome.email-sent"`},
		{"order.cancel", `routing key "order.cancel" ends in the verb "cancel", which asks for something to be done; a fact states what happened, e.g. "order.cancelled"`},
		{"user.sign_up.create", `routing key "user.sign_up.create" ends in the verb "create", which asks for something to be done; a fact states what happened, e.g. "user.sign_up.created"`},
		{"payment.process", `routing key "payment.process" ends in the verb "process", which asks for something to be done; a fact states what happened, e.g. "payment.processed"`},
		{"order.status", `routing key "order.status" should end in a verb in the past tense, and "status" is not one; a fact states what happened, e.g. "order.placed"`},
		{"news.feed", `routing key "news.feed" should end in a verb in the past tense, and "feed" is not one; a fact states what happened, e.g. "order.placed"`},      // looks past, is not
		{"order.cost", `routing key "order.cost" should end in a verb in the past tense, and "cost" is not one; a fact states what happened, e.g. "order.placed"`},    // a noun, not taken as past
		{"heartbeat", `routing key "heartbeat" should end in a verb in the past tense, and "heartbeat" is not one; a fact states what happened, e.g. "order.placed"`}, // one segment
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := pastTenseProblem(tt.key); got != tt.want {
				t.Errorf("pastTenseProblem(%q)\n got: %s\nwant: %s", tt.key, got, tt.want)
			}
		})
	}
}
