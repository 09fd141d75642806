package streamproto

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	samqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
)

// clientMessage is o as the stream client's own message type, encoded by
// the client: what a direct write sent before it was encoded by hand.
func clientMessage(o Outgoing) *samqp.AMQP10 {
	m := samqp.NewMessage(o.Body)
	m.Properties = &samqp.MessageProperties{MessageID: o.MessageID, ContentType: o.ContentType, CreationTime: o.Timestamp}
	if len(o.Headers) > 0 {
		m.ApplicationProperties = maps.Clone(o.Headers)
	}
	m.Annotations = samqp.Annotations{"x-exchange": o.Exchange, "x-routing-key": o.RoutingKey}
	if o.Type != "" {
		m.Annotations["x-basic-type"] = o.Type
		if o.TypeAsProperty {
			if m.ApplicationProperties == nil {
				m.ApplicationProperties = map[string]any{}
			}
			m.ApplicationProperties["x-basic-type"] = o.Type
		}
	}
	if o.DeliveryMode != 0 {
		m.Annotations["x-basic-delivery-mode"] = o.DeliveryMode
	}
	return m
}

// decoded is what the stream client's decoder reads from b.
func decoded(t *testing.T, b []byte) *samqp.Message {
	t.Helper()
	var m samqp.Message
	if err := m.UnmarshalBinary(b); err != nil {
		t.Fatalf("the stream client cannot read the encoding: %v", err)
	}
	return &m
}

// sameAsTheClient checks that encode writes what the client writes for
// o: the same length (every value in the same width), and the same
// message read back. Map entries come in Go's map order, so the bytes
// themselves differ between runs whenever a map has two entries or more.
func sameAsTheClient(t *testing.T, o Outgoing) {
	t.Helper()
	want, err := clientMessage(o).MarshalBinary()
	if err != nil {
		t.Fatalf("the client's encoder: %v", err)
	}
	m, err := encode(o)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	got, _ := m.MarshalBinary()
	if cap(got) != encodedSize(o) {
		t.Fatalf("the encoding outgrew encodedSize's %d bytes: it is %d", encodedSize(o), len(got))
	}
	if len(got) != len(want) {
		t.Fatalf("encoding is %d bytes, the client's %d:\n got % x\nwant % x", len(got), len(want), got, want)
	}
	if g, w := decoded(t, got), decoded(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("read back:\n got %+v\nwant %+v", g, w)
	}
	props := len(o.Headers)
	if o.TypeAsProperty && o.Type != "" {
		props++
	}
	if props <= 1 && !bytes.Equal(sortedAnnotations(t, got), sortedAnnotations(t, want)) {
		t.Fatalf("bytes differ:\n got % x\nwant % x", got, want)
	}
}

// sortedAnnotations returns b with its message annotations (the first
// section) written in one order, so that two encodings of a message whose
// other maps have at most one entry compare byte for byte.
func sortedAnnotations(t *testing.T, b []byte) []byte {
	t.Helper()
	m := decoded(t, b)
	o := Outgoing{Exchange: m.Annotations["x-exchange"].(string), RoutingKey: m.Annotations["x-routing-key"].(string)}
	o.Type, _ = m.Annotations["x-basic-type"].(string)
	o.DeliveryMode, _ = m.Annotations["x-basic-delivery-mode"].(uint8)
	head := appendAnnotations(nil, o)
	rest := b[len(head):] // the annotations' length does not depend on their order
	return append(head, rest...)
}

func sample() Outgoing {
	return Outgoing{
		Body:         []byte(`{"id":"0193a1b2-...","payload":{"order_id":"A-1"}}`),
		Exchange:     "warren.events",
		RoutingKey:   "orders.placed.v1",
		MessageID:    "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		Type:         "orders.placed",
		ContentType:  "application/json",
		Timestamp:    time.UnixMilli(1765065600123),
		DeliveryMode: 2,
	}
}

func TestEncodeWritesWhatTheClientWrites(t *testing.T) {
	long := strings.Repeat("x", 300) // str32, sym32 and vbin32 forms
	cases := map[string]func(*Outgoing){
		"a fact as warren publishes it": func(*Outgoing) {},
		"no type":                       func(o *Outgoing) { o.Type = "" },
		"no delivery mode":              func(o *Outgoing) { o.DeliveryMode = 0 },
		"the type as a property too":    func(o *Outgoing) { o.TypeAsProperty = true },
		"the type as a property and headers": func(o *Outgoing) {
			o.TypeAsProperty, o.Headers = true, map[string]any{"x-fact-version": int64(2)}
		},
		"no type to write as a property": func(o *Outgoing) { o.TypeAsProperty, o.Type = true, "" },
		"no content type or time":        func(o *Outgoing) { o.ContentType, o.Timestamp = "", time.Time{} },
		"empty message id and body":      func(o *Outgoing) { o.MessageID, o.Body = "", nil },
		"a 1 KiB body":                   func(o *Outgoing) { o.Body = bytes.Repeat([]byte("a"), 1024) },
		"long names": func(o *Outgoing) {
			o.Exchange, o.RoutingKey, o.Type, o.ContentType, o.MessageID = long, long, long, long, long
		},
		"a time before 1970": func(o *Outgoing) { o.Timestamp = time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC) },
	}
	values := map[string]any{
		"nil": nil, "true": true, "false": false, "string": "v", "long string": long, "bytes": []byte{0, 1, 2}, "long bytes": []byte(long),
		"time": time.UnixMilli(1765065600123), "int": 7, "large int": -1 << 40, "int8": int8(-3), "int16": int16(-300),
		"small int32": int32(-128), "int32": int32(1 << 20), "small int64": int64(127), "int64": int64(-129), "uint8": uint8(200),
		"uint16": uint16(60000), "zero uint32": uint32(0), "small uint32": uint32(255), "uint32": uint32(256),
		"zero uint64": uint64(0), "small uint64": uint64(1), "uint64": uint64(1 << 63), "float32": float32(1.5), "float64": -2.25,
	}
	for name, v := range values {
		cases["a header: "+name] = func(o *Outgoing) { o.Headers = map[string]any{"h": v} }
	}
	cases["a long header name"] = func(o *Outgoing) { o.Headers = map[string]any{long: "v"} }
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			o := sample()
			change(&o)
			sameAsTheClient(t, o)
		})
	}
}

func TestEncodeManyHeadersAsTheClient(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	kinds := []func() any{
		func() any { return r.Int64N(1<<40) - 1<<39 },
		func() any { return int32(r.Int32N(1000) - 500) },
		func() any { return strings.Repeat("é", r.IntN(200)) },
		func() any { return r.IntN(2) == 0 },
		func() any { return r.Float64() },
		func() any { return uint64(r.Uint32N(600)) },
		func() any { return time.UnixMilli(r.Int64N(1 << 42)) },
		func() any { return nil },
	}
	for i := range 200 {
		o := sample()
		o.Headers = map[string]any{}
		for j := range r.IntN(12) {
			o.Headers[strings.Repeat("k", j+1)] = kinds[r.IntN(len(kinds))]()
		}
		if i%2 == 0 {
			o.Body = bytes.Repeat([]byte{byte(i)}, r.IntN(2000))
		}
		sameAsTheClient(t, o)
	}
}

func TestEncodeRefusesWhatAPropertyCannotHold(t *testing.T) {
	for name, c := range map[string]struct {
		change func(*Outgoing)
		want   string
	}{
		"a table":                  {func(o *Outgoing) { o.Headers = map[string]any{"trace": map[string]any{"a": 1}} }, `header "trace": a map[string]interface {} cannot be`},
		"a header value not UTF-8": {func(o *Outgoing) { o.Headers = map[string]any{"name": "\xff"} }, `header "name": its value is not UTF-8`},
		"a header name not UTF-8":  {func(o *Outgoing) { o.Headers = map[string]any{"\xff": "v"} }, `its name is not UTF-8`},
		"a routing key not UTF-8":  {func(o *Outgoing) { o.RoutingKey = "orders.\xff" }, `the routing key "orders.\xff" is not UTF-8`},
	} {
		t.Run(name, func(t *testing.T) {
			o := sample()
			c.change(&o)
			_, err := encode(o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("encode: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestEncodedMessageReadsBack(t *testing.T) {
	o := sample()
	o.Headers = map[string]any{"x-warren-version": int64(2), "trace": "abc"}
	o.TypeAsProperty = true
	m, err := encode(o)
	if err != nil {
		t.Fatal(err)
	}
	var back encodedMessage
	if err := back.UnmarshalBinary(m.raw); err != nil {
		t.Fatal(err)
	}
	back.o.Timestamp = back.o.Timestamp.In(o.Timestamp.Location())
	if !reflect.DeepEqual(back.o, o) {
		t.Fatalf("read back %+v, want %+v", back.o, o)
	}
	p := m.GetMessageProperties()
	if p.MessageID != o.MessageID || p.ContentType != o.ContentType || !p.CreationTime.Equal(o.Timestamp) {
		t.Fatalf("properties %+v", p)
	}
	if a := m.GetMessageAnnotations(); a["x-routing-key"] != o.RoutingKey || a["x-exchange"] != o.Exchange || a["x-basic-type"] != o.Type || a["x-basic-delivery-mode"] != o.DeliveryMode {
		t.Fatalf("annotations %v", a)
	}
	if h := m.GetApplicationProperties(); h["x-basic-type"] != o.Type || h["trace"] != "abc" || len(o.Headers) != 2 {
		t.Fatalf("application properties %v (the Outgoing's headers %v)", h, o.Headers)
	}
	if d := m.GetData(); len(d) != 1 || !bytes.Equal(d[0], o.Body) {
		t.Fatalf("data %q", d)
	}
	if m.HasPublishingId() {
		t.Fatal("a new message has a publishing id")
	}
	m.SetPublishingId(42)
	if !m.HasPublishingId() || m.GetPublishingId() != 42 {
		t.Fatal("the publishing id set is not kept")
	}
}

// BenchmarkEncode measures a direct write's encoding of the benchmarks'
// order (1,086 bytes with its envelope, and the headers warren gives a
// fact with an ordering key) beside the stream client's encoder.
func BenchmarkEncode(b *testing.B) {
	o := sample()
	o.Body = bytes.Repeat([]byte("a"), 1086)
	o.Headers = map[string]any{"x-fact-version": int64(1), "x-ordering-key": "A-000123", "x-ordering-seq": int64(12345), "x-ordering-source": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}
	b.Run("warren", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encode(o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := clientMessage(o).MarshalBinary(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
