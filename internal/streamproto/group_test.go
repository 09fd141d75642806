package streamproto

import (
	"reflect"
	"testing"
	"time"

	samqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
)

// convert gives a fact published through the exchange the same headers
// and type whichever way the broker's release kept it in the stream (as
// read back from RabbitMQ 3.10.8 and 4.0.5 with the stream client).
func TestConvertReadsEitherReleasesForm(t *testing.T) {
	at := time.UnixMilli(1765065600000)
	props := &samqp.MessageProperties{MessageID: "m1", ContentType: "application/json", CreationTime: at}
	forms := map[string]*samqp.Message{
		"RabbitMQ 3.10": {
			Properties:            props,
			Annotations:           samqp.Annotations{"x-basic-delivery-mode": uint8(2), "x-exchange": "events", "x-routing-key": "item.added"},
			ApplicationProperties: map[string]any{"k": "v", "x-basic-type": "item.added", "x-fact-version": int64(3)},
			Data:                  [][]byte{[]byte("{}")},
		},
		"RabbitMQ 4.0": {
			Properties: props,
			Annotations: samqp.Annotations{"x-basic-type": "item.added", "x-exchange": "events", "x-routing-key": "item.added",
				"x-fact-version": int64(3), "x-basic-priority": uint8(4), "x-death": []any{}, int64(7): "numbered"},
			ApplicationProperties: map[string]any{"k": "v"},
			Data:                  [][]byte{[]byte("{}")},
		},
	}
	want := Message{Partition: "p-0", Offset: 12, Body: []byte("{}"), Exchange: "events", RoutingKey: "item.added", MessageID: "m1",
		Type: "item.added", ContentType: "application/json", Timestamp: at, Headers: map[string]any{"k": "v", "x-fact-version": int64(3)}}
	for name, m := range forms {
		t.Run(name, func(t *testing.T) {
			if got := convert("p-0", 12, m); !reflect.DeepEqual(got, want) {
				t.Fatalf("convert:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
