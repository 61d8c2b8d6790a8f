package io.nearstream.client;

/**
 * Bytes that do not follow docs/protocol.md: a frame or body that does not parse ({@link
 * StatusCode#MALFORMED_REQUEST}) or a chunk whose header, CRC or record framing is wrong ({@link
 * StatusCode#CORRUPT_CHUNK}). Never retriable: the same bytes fail the same way.
 */
public class NearstreamProtocolException extends NearstreamClientException {
    private static final long serialVersionUID = 1L;

    public NearstreamProtocolException(StatusCode status, String message) {
        super(status, message);
    }

    static NearstreamProtocolException malformed(String message) {
        return new NearstreamProtocolException(StatusCode.MALFORMED_REQUEST, message);
    }

    static NearstreamProtocolException corruptChunk(String message) {
        return new NearstreamProtocolException(StatusCode.CORRUPT_CHUNK, message);
    }
}
