package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// outbox is the agent's stdout: one JSON-RPC message a Write, whole lines
// only, from the SDK's connection and from the input filter alike. It
// also runs what waits for a session/new answer to be out (see after).
type outbox struct {
	mu     sync.Mutex
	w      io.Writer
	waits  map[string]func() // by session id
	onSent func(fn func())   // runs a waiter (the server's owned goroutine)

	// open are the client's requests not answered yet, by id: the
	// server's end waits for their answers to be out.
	open     map[string]int // how many under that id (a client may reuse one)
	answered *sync.Cond     // on mu: an open request was answered
}

func newOutbox(w io.Writer, onSent func(func())) *outbox {
	o := &outbox{w: w, onSent: onSent, open: map[string]int{}}
	o.answered = sync.NewCond(&o.mu)
	return o
}

// message is what the outbox and the filter read of a message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// isAnswer says whether m answers a request (rather than being one, or
// a notification).
func (m message) isAnswer() bool {
	return len(m.ID) > 0 && string(m.ID) != "null" && m.Method == "" && (len(m.Result) > 0 || len(m.Error) > 0)
}

// sessionID is the session an answer names ("" for none).
func (m message) sessionID() string {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if len(m.Result) == 0 || m.Result[0] != '{' || json.Unmarshal(m.Result, &r) != nil {
		return ""
	}
	return r.SessionID
}

func (o *outbox) Write(b []byte) (int, error) {
	var m message
	parsed := json.Unmarshal(bytes.TrimSpace(b), &m) == nil
	o.mu.Lock()
	n, err := o.w.Write(b)
	var due []func()
	if parsed && m.isAnswer() {
		if id := idKey(m.ID); o.open[id] > 0 {
			if o.open[id]--; o.open[id] == 0 {
				delete(o.open, id)
			}
			o.answered.Broadcast()
		}
	}
	if parsed && len(o.waits) > 0 && m.isAnswer() {
		if id := m.sessionID(); id != "" && o.waits[id] != nil {
			due = append(due, o.waits[id])
			delete(o.waits, id)
		}
	}
	o.mu.Unlock()
	for _, fn := range due {
		o.onSent(fn)
	}
	return n, err
}

// received notes a request of the client's, which is open until its
// answer is written.
func (o *outbox) received(line []byte) {
	var m message
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" || m.Method == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open[idKey(m.ID)]++
}

// idKey is an id as the open requests are keyed: compact, as the SDK
// writes it back in its answer (an id with spaces inside, an object or
// an array, would otherwise never be seen answered).
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// drain waits until every request received has been answered.
func (o *outbox) drain() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.open) > 0 {
		o.answered.Wait()
	}
}

// after runs fn once the answer that names session id has been written:
// updates about a session the client does not know yet would be dropped.
func (o *outbox) after(id string, fn func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.waits == nil {
		o.waits = map[string]func(){}
	}
	o.waits[id] = fn
}

// rpcError is a JSON-RPC error answer to a message that has no usable id.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"` // null when unknown
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	} `json:"error"`
}

// JSON-RPC's codes for input that is no request.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// maxLine bounds one message, below the SDK's own bound (a longer line
// would end its connection): a longer one is answered as unparsable.
const maxLine = 8 << 20

// filter copies the client's messages from in to w, one line each, and
// answers what is not a JSON-RPC message itself (the SDK would only log
// it): malformed JSON with a parse error, JSON that is not an object (a
// batch, say: ACP has none) with an invalid-request error. The agent then
// reads on. It closes w at the end of in, or when w's reader is gone.
//
// A request method sent as a notification (no id, or a null one) is
// dropped, said on log: the SDK would run it in its notification queue,
// where a prompt would hold up every later notification, session/cancel
// included, until its end, and a session/new would open a session no one
// knows. JSON-RPC answers no notification, so nothing is written back.
func filter(in io.Reader, w *io.PipeWriter, out *outbox, log io.Writer) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if t := bytes.TrimSpace(line); len(t) > 0 {
			code, msg, id := 0, "", json.RawMessage(nil)
			switch {
			case len(t) > maxLine:
				// Its id, when it comes before the long part, lets the
				// client match the refusal to its request.
				code, msg, id = codeInvalidRequest, "Invalid request: message longer than 8 MiB", leadingID(t)
			case !json.Valid(t):
				code, msg = codeParseError, "Parse error"
			case t[0] != '{':
				code, msg = codeInvalidRequest, "Invalid request: want one JSON object a line"
			}
			if code != 0 {
				e := rpcError{JSONRPC: "2.0", ID: id}
				e.Error.Code, e.Error.Message = code, msg
				b, _ := json.Marshal(e)
				out.Write(append(b, '\n'))
			} else if m := requestWithoutID(t); m != "" {
				fmt.Fprintf(log, "pi-remote: acp: ignoring %s sent without an id (a request needs one)\n", m)
			} else {
				out.received(t)
				if _, werr := w.Write(append(t, '\n')); werr != nil {
					return
				}
			}
		}
		if err != nil {
			w.Close()
			return
		}
	}
}

// requests are the agent's methods that are requests in ACP: sent
// without an id, they are refused (see filter).
var requests = map[string]bool{
	"initialize": true, "authenticate": true, "logout": true,
	"session/new": true, "session/load": true, "session/prompt": true,
	"session/set_mode": true, "session/set_model": true, "session/set_config_option": true,
	"session/list": true, "session/close": true, "session/resume": true, "session/fork": true,
}

// requestWithoutID is the method of line when it is a request method sent
// as a notification, else "".
func requestWithoutID(line []byte) string {
	var m message
	if json.Unmarshal(line, &m) != nil || !requests[m.Method] || (len(m.ID) > 0 && string(m.ID) != "null") {
		return ""
	}
	return m.Method
}

// leadingID is the id of the message that starts line (cut short, so not
// valid JSON as a whole) when the id comes before the part cut off, else
// nil.
func leadingID(line []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(line))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			var id any
			if json.Unmarshal(v, &id) != nil {
				return nil
			}
			switch id.(type) {
			case string, float64:
				return v
			}
			return nil
		}
	}
	return nil
}

// readLine reads one line (without its end), keeping at most maxLine+1
// bytes of it so a runaway line cannot take the memory.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line) <= maxLine {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}
