package consumer

import (
	"bytes"
	"errors"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// decodeChunk decodes msgs, a chunk of batch d, with worker w's decoder
// into d.evb[w] and d.dead[w] (each worker has its own, so chunks of one
// batch decode in parallel).
func (c *Consumer) decodeChunk(d *decoded, w int, msgs []record) {
	dec := &c.dec[w]
	eb := &d.evb[w]
	for j := range msgs {
		m := &msgs[j]
		src := schema.Source{Topic: c.cfg.Kafka.Topic, Partition: m.partition, Offset: m.offset}
		// Decoded in place and copied once, into the batch's columns: no
		// model.Event, no attrs map.
		v, err := dec.DecodeView(m.value)
		if err == nil {
			eb.AddView(v, src, d.nowMS)
			continue
		}
		kind := model.RejectBadJSON
		var ve *model.ValidationError
		if errors.As(err, &ve) && ve.Kind != "" {
			kind = ve.Kind
		}
		d.dead[w] = append(d.dead[w], schema.DeadLetter{
			ReceivedMS: d.nowMS, Source: src, Key: string(m.key), Reason: kind, Error: err.Error(),
			// A copy: m.value points into a response buffer, recycled
			// once the chunk is decoded.
			Payload: bytes.Clone(m.value),
		})
	}
}
