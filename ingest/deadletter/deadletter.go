// Package deadletter is the format of handoff's dead-letter topic, shared by
// every consumer that rejects messages (the events ingester and the results
// consumer): the original message, unchanged, with headers saying why it was
// rejected and where it was read. The same rejection is also a row of the
// dead_letters table (sink.InsertDeadLetters); callers write the topic first,
// then the table, then commit.
package deadletter

import (
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/store/schema"
)

// Headers of dead-letter messages. The value is the original message.
const (
	HeaderReason          = "handoff-reason"           // model.RejectKind, e.g. bad_json
	HeaderError           = "handoff-error"            // the validation error text
	HeaderSourceTopic     = "handoff-source-topic"     // where the message was read
	HeaderSourcePartition = "handoff-source-partition" // decimal
	HeaderSourceOffset    = "handoff-source-offset"    // decimal
	HeaderReceivedMS      = "handoff-received-ms"      // when it was rejected, Unix ms
	HeaderTruncated       = "handoff-truncated"        // "true" when the value was cut to fit the topic
)

// maxValue is the largest value put on the dead-letter topic: the topic's
// max.message.bytes less room for key and headers. Only a message that could
// not be written otherwise is cut (and marked with HeaderTruncated).
const maxValue = topics.MaxMessageBytes - 64<<10

// Messages returns the dead-letter topic message of each rejection, keyed by
// the original key. An empty original value stays an empty value (not a
// tombstone): the dead letter must show what was received.
func Messages(dead []schema.DeadLetter) []kafka.Message {
	out := make([]kafka.Message, len(dead))
	for i, d := range dead {
		value := d.Payload
		if value == nil {
			value = []byte{}
		}
		hdr := []kafka.Header{
			{Key: HeaderReason, Value: []byte(d.Reason)},
			{Key: HeaderError, Value: []byte(d.Error)},
			{Key: HeaderSourceTopic, Value: []byte(d.Source.Topic)},
			{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(int(d.Source.Partition)))},
			{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(d.Source.Offset, 10))},
			{Key: HeaderReceivedMS, Value: []byte(strconv.FormatInt(d.ReceivedMS, 10))},
		}
		if len(value) > maxValue {
			value = value[:maxValue]
			hdr = append(hdr, kafka.Header{Key: HeaderTruncated, Value: []byte("true")})
		}
		var key []byte
		if d.Key != "" {
			key = []byte(d.Key)
		}
		out[i] = kafka.Message{Key: key, Value: value, Headers: hdr}
	}
	return out
}
