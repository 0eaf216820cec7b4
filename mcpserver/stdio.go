package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdio is the MCP server's stdio transport: one JSON-RPC message a
// line in each direction. A line it cannot take (not JSON, not UTF-8, not
// a JSON-RPC message, a batch, longer than maxLine) gets a JSON-RPC error
// answer and the server reads on; the SDK's own IOTransport ends the
// session on the first such line, since any error of a Connection's Read
// is fatal to the SDK. The end of the input ends the session (MCP's stdio
// shutdown): the calls in flight are cancelled, their commands killed.
type stdio struct {
	in      io.Reader
	out     io.Writer
	maxLine int
}

var _ mcp.Transport = (*stdio)(nil)

// Connect starts reading the input: its lines are read ahead by a
// goroutine, so that Close unblocks a Read waiting for input as the SDK
// requires. A read of the input cannot be interrupted: after Close the
// goroutine ends at the next line or at the end of the input.
func (t *stdio) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		maxLine: t.maxLine,
		out:     t.out,
		lines:   make(chan inputLine),
		closed:  make(chan struct{}),
	}
	go c.readLines(bufio.NewReaderSize(t.in, 64<<10), t.maxLine)
	return c, nil
}

// inputLine is one line of input (without its end), or why there is none.
type inputLine struct {
	text    []byte
	tooLong bool
	err     error // io.EOF at the end
}

// lineConn is an mcp.Connection over lines; safe for concurrent use as
// the SDK uses it (one reader, several writers, Close from anywhere).
type lineConn struct {
	maxLine   int
	lines     chan inputLine
	closed    chan struct{}
	closeOnce sync.Once

	// writeMu makes each message, the SDK's or an error answer of the
	// connection's own, one whole line.
	writeMu sync.Mutex
	out     io.Writer
}

// readLines sends the input's lines to c.lines until the end of the input
// or Close. A line longer than maxLine is not kept, only reported.
func (c *lineConn) readLines(r *bufio.Reader, maxLine int) {
	for {
		l := readLine(r, maxLine)
		if len(l.text) > 0 || l.tooLong || l.err == nil {
			select {
			case c.lines <- inputLine{text: l.text, tooLong: l.tooLong}:
			case <-c.closed:
				return
			}
		}
		if l.err != nil {
			select {
			case c.lines <- inputLine{err: l.err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads up to a newline (or the end of the input), keeping at most
// maxLine bytes; the line is returned without its LF or CR LF.
func readLine(r *bufio.Reader, maxLine int) inputLine {
	var l inputLine
	for {
		chunk, err := r.ReadSlice('\n')
		if !l.tooLong {
			if len(l.text)+len(chunk) > maxLine+2 {
				l.tooLong, l.text = true, nil
			} else {
				l.text = append(l.text, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		l.err = err
		l.text = bytes.TrimSuffix(bytes.TrimSuffix(l.text, []byte("\n")), []byte("\r"))
		if len(l.text) > maxLine {
			l.tooLong, l.text = true, nil
		}
		return l
	}
}

// Read returns the next message, answering the lines that are none.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l := <-c.lines:
			if l.err != nil {
				return nil, l.err
			}
			msg, answer, err := decodeLine(l, c.maxLine)
			if err != nil {
				return nil, err
			}
			if answer != nil {
				if err := c.writeLine(answer); err != nil {
					return nil, err
				}
				continue
			}
			if msg == nil {
				continue
			}
			return msg, nil
		}
	}
}

// Write writes one message as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode %T: %w", msg, err)
	}
	return c.writeLine(data)
}

func (c *lineConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	return err
}

// Close stops reading; the process owns the streams themselves.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID is empty: stdio has one session.
func (c *lineConn) SessionID() string { return "" }

// decodeLine is the message a line holds, or the JSON-RPC error answer
// for a line that holds none; both are nil for an empty line.
func decodeLine(l inputLine, maxLine int) (jsonrpc.Message, []byte, error) {
	text := bytes.TrimSpace(l.text)
	var answer []byte
	var err error
	switch {
	case l.tooLong:
		answer, err = errorAnswer(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: the line is longer than the limit of %d bytes", maxLine))
	case len(text) == 0:
	case !utf8.Valid(text):
		answer, err = errorAnswer(nil, jsonrpc.CodeParseError, "Parse error: the line is not UTF-8")
	case !json.Valid(text):
		answer, err = errorAnswer(nil, jsonrpc.CodeParseError, "Parse error: the line is not one JSON value")
	case text[0] == '[':
		answer, err = errorAnswer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: batches are not supported; send one message a line")
	case text[0] != '{':
		answer, err = errorAnswer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a message is a JSON object")
	default:
		msg, decodeErr := jsonrpc.DecodeMessage(text)
		if decodeErr == nil {
			return msg, nil, nil
		}
		answer, err = errorAnswer(requestID(text), jsonrpc.CodeInvalidRequest, "Invalid Request: "+decodeErr.Error())
	}
	return nil, answer, err
}

// requestID is the id of a message that is not a valid one, when it has a
// valid id (a string or a number), or nil.
func requestID(text []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(text, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return nil
	}
	if id, err := jsonrpc.MakeID(v); err != nil || !id.IsValid() {
		return nil
	}
	return m.ID
}

// errorAnswer is a JSON-RPC error response; a nil id is written as null,
// as JSON-RPC wants when the request's id is unknown.
func errorAnswer(id json.RawMessage, code int64, message string) ([]byte, error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{code, message}})
}
