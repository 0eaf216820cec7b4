package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
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
}

func (o *outbox) Write(b []byte) (int, error) {
	o.mu.Lock()
	n, err := o.w.Write(b)
	var due []func()
	if len(o.waits) > 0 {
		var m struct {
			Result *struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
		}
		if json.Unmarshal(bytes.TrimSpace(b), &m) == nil && m.Result != nil {
			if fn, ok := o.waits[m.Result.SessionID]; ok {
				delete(o.waits, m.Result.SessionID)
				due = append(due, fn)
			}
		}
	}
	o.mu.Unlock()
	for _, fn := range due {
		o.onSent(fn)
	}
	return n, err
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
	JSONRPC string `json:"jsonrpc"`
	ID      any    `json:"id"` // always null
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
func filter(in io.Reader, w *io.PipeWriter, out io.Writer) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if t := bytes.TrimSpace(line); len(t) > 0 {
			code, msg := 0, ""
			switch {
			case len(t) > maxLine:
				code, msg = codeParseError, "Parse error: message longer than 8 MiB"
			case !json.Valid(t):
				code, msg = codeParseError, "Parse error"
			case t[0] != '{':
				code, msg = codeInvalidRequest, "Invalid request: want one JSON object a line"
			}
			if code != 0 {
				e := rpcError{JSONRPC: "2.0"}
				e.Error.Code, e.Error.Message = code, msg
				b, _ := json.Marshal(e)
				out.Write(append(b, '\n'))
			} else if _, werr := w.Write(append(t, '\n')); werr != nil {
				return
			}
		}
		if err != nil {
			w.Close()
			return
		}
	}
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
