package amqpmsg

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestHeaderInt(t *testing.T) {
	h := amqp.Table{"i8": int8(3), "i16": int16(3), "i32": int32(3), "i64": int64(3), "int": 3, "u8": uint8(3), "u16": uint16(3), "u32": uint32(3), "s": "3", "f": 3.0}
	for k, want := range map[string]int{"i8": 3, "i16": 3, "i32": 3, "i64": 3, "int": 3, "u8": 3, "u16": 3, "u32": 3, "s": 0, "f": 0, "absent": 0} {
		if got := HeaderInt(h, k); got != want {
			t.Errorf("HeaderInt(%s) = %d, want %d", k, got, want)
		}
	}
}

func TestRepublish(t *testing.T) {
	d := amqp.Delivery{
		Headers: amqp.Table{"a": "1"}, ContentType: "application/json", DeliveryMode: amqp.Transient,
		Expiration: "1000", UserId: "guest", MessageId: "id", Type: "order.placed",
		Timestamp: time.Unix(1, 0), Body: []byte(`{}`),
	}
	h := CloneHeaders(d.Headers, 1)
	h["b"] = "2"
	p := Republish(d, h)
	if p.Expiration != "" || p.UserId != "" || p.DeliveryMode != amqp.Persistent {
		t.Errorf("copy keeps expiration %q, user id %q, delivery mode %d", p.Expiration, p.UserId, p.DeliveryMode)
	}
	if p.MessageId != "id" || p.Type != "order.placed" || string(p.Body) != `{}` || !p.Timestamp.Equal(d.Timestamp) {
		t.Errorf("copy lost properties: %+v", p)
	}
	if _, ok := d.Headers["b"]; ok || p.Headers["a"] != "1" || p.Headers["b"] != "2" {
		t.Errorf("headers: original %v, copy %v", d.Headers, p.Headers)
	}
}
