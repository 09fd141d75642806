package asyncapi

// The parts of an AsyncAPI 3.0.0 document that warren writes. Maps are
// encoded with sorted keys, which keeps the output deterministic.

type document struct {
	AsyncAPI           string               `json:"asyncapi"`
	Info               infoObject           `json:"info"`
	DefaultContentType string               `json:"defaultContentType"`
	Channels           map[string]channel   `json:"channels"`
	Operations         map[string]operation `json:"operations"`
	Components         components           `json:"components"`
}

type infoObject struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

type ref struct {
	Ref string `json:"$ref"`
}

type channel struct {
	Address     any              `json:"address"` // a string; nil for a reply channel, whose address is dynamic
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Messages    map[string]ref   `json:"messages"`
	Bindings    *channelBindings `json:"bindings,omitempty"`
}

type channelBindings struct {
	AMQP amqpChannel `json:"amqp"`
}

type amqpChannel struct {
	Is       string        `json:"is"`
	Exchange *amqpExchange `json:"exchange,omitempty"`
	Queue    *amqpQueue    `json:"queue,omitempty"` // a stream: is "queue"
	// What the AMQP binding has no field for, for a stream's channel: the
	// type of a super stream's exchange (x-consistent-hash is not among
	// the binding's types), the queue's or exchange's arguments as
	// declared (x-queue-type stream and the retention), its bindings to
	// the events exchange, and a super stream's partition streams.
	ExchangeType   string            `json:"x-warren-exchange-type,omitempty"`
	Arguments      map[string]any    `json:"x-warren-arguments,omitempty"`
	Bound          []amqpBinding     `json:"x-warren-bindings,omitempty"`
	Partitions     []streamPartition `json:"x-warren-partitions,omitempty"`
	BindingVersion string            `json:"bindingVersion"`
}

type amqpExchange struct {
	Name       string `json:"name"`
	Type       string `json:"type,omitempty"` // "" for a super stream's exchange: see amqpChannel.ExchangeType
	Durable    bool   `json:"durable"`
	AutoDelete bool   `json:"autoDelete"`
}

type amqpQueue struct {
	Name       string `json:"name"`
	Durable    bool   `json:"durable"`
	Exclusive  bool   `json:"exclusive"`
	AutoDelete bool   `json:"autoDelete"`
}

// amqpBinding binds the channel's queue or exchange to an exchange.
type amqpBinding struct {
	Exchange   string `json:"exchange"`
	RoutingKey string `json:"routingKey"`
}

// streamPartition is one partition stream of a super stream.
type streamPartition struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

type operation struct {
	Action      string             `json:"action"`
	Channel     ref                `json:"channel"`
	Title       string             `json:"title,omitempty"`
	Summary     string             `json:"summary,omitempty"`
	Description string             `json:"description,omitempty"`
	Messages    []ref              `json:"messages"`
	Bindings    *operationBindings `json:"bindings,omitempty"`
	Reply       *operationReply    `json:"reply,omitempty"`
	Queue       string             `json:"x-warren-queue,omitempty"` // what the consumer reads: its work queue, shard queues or stream
}

type operationReply struct {
	Address  *replyAddress `json:"address,omitempty"`
	Channel  ref           `json:"channel"`
	Messages []ref         `json:"messages"`
}

type replyAddress struct {
	Location string `json:"location"`
}

type operationBindings struct {
	AMQP amqpOperation `json:"amqp"`
}

type amqpOperation struct {
	DeliveryMode   int    `json:"deliveryMode,omitempty"`
	Mandatory      *bool  `json:"mandatory,omitempty"`
	Timestamp      *bool  `json:"timestamp,omitempty"`
	Ack            *bool  `json:"ack,omitempty"`
	BindingVersion string `json:"bindingVersion"`
}

type components struct {
	Schemas  map[string]any     `json:"schemas"`
	Messages map[string]message `json:"messages"`
}

type message struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Summary     string           `json:"summary,omitempty"`
	Description string           `json:"description,omitempty"`
	ContentType string           `json:"contentType"`
	Headers     map[string]any   `json:"headers,omitempty"`
	Payload     map[string]any   `json:"payload"`
	Bindings    *messageBindings `json:"bindings,omitempty"`
}

type messageBindings struct {
	AMQP amqpMessage `json:"amqp"`
}

type amqpMessage struct {
	MessageType    string `json:"messageType"`
	BindingVersion string `json:"bindingVersion"`
}
