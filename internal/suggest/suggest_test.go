package suggest

import "testing"

func TestClosest(t *testing.T) {
	commands := []string{"asyncapi", "check", "declare", "diff", "docs", "generate", "replay", "status", "topology"}
	cases := []struct {
		word       string
		candidates []string
		want       string
		ok         bool
	}{
		{"genrate", commands, "generate", true},  // a letter left out
		{"generaet", commands, "generate", true}, // two letters swapped
		{"stauts", commands, "status", true},
		{"dif", commands, "diff", true},
		{"docs", commands, "", false}, // the word itself is no suggestion
		{"frobnicate", commands, "", false},
		{"xyz", commands, "", false},
		{"mialer", []string{"mailer", "indexer"}, "mailer", true},
		{"order.shiped", []string{"order.placed", "order.shipped"}, "order.shipped", true},
		{"../common/mony.json", []string{"../common/item.json", "../common/money.json"}, "../common/money.json", true},
		{"anything", nil, "", false},
	}
	for _, c := range cases {
		got, ok := Closest(c.word, c.candidates)
		if got != c.want || ok != c.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", c.word, got, ok, c.want, c.ok)
		}
	}
}

func TestDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"ab", "ba", 1}, {"abc", "acb", 1}, {"mailer", "mailer", 0}, {"héllo", "hello", 1},
	}
	for _, c := range cases {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestSlip(t *testing.T) {
	keywords := []string{"not", "type", "enum", "items", "format", "pattern", "required", "examples", "minLength", "properties", "x-request", "x-routing-key", "x-ordering-key"}
	cases := []struct {
		word, want string
		ok         bool
	}{
		{"tpye", "type", true}, // two neighbours swapped, in a short keyword
		{"Type", "type", true}, // case alone
		{"typ", "", false},     // a short keyword allows a swap only
		{"note", "", false},    // a word of its own, one letter from "not"
		{"enums", "", false},
		{"itmes", "items", true}, // one edit, up to eight characters
		{"fromat", "format", true},
		{"patern", "pattern", true},
		{"requried", "required", true},
		{"requird", "required", true},
		{"reqiured", "required", true},
		{"requireds", "required", true},
		{"requride", "", false}, // two edits from an eight-character keyword
		{"minLenght", "minLength", true},
		{"propetres", "properties", true}, // two edits, beyond eight characters
		{"propertes", "properties", true},
		{"x-routng-key", "x-routing-key", true},
		{"x_routing_key", "x-routing-key", true},
		{"x-request-id", "", false}, // a vendor's header, three edits from "x-request"
		{"x-order-key", "", false},  // three edits from "x-ordering-key"
		{"required", "", false},     // the keyword itself is no slip
	}
	for _, c := range cases {
		got, ok := Slip(c.word, keywords)
		if got != c.want || ok != c.ok {
			t.Errorf("Slip(%q) = %q, %v; want %q, %v", c.word, got, ok, c.want, c.ok)
		}
	}
}
