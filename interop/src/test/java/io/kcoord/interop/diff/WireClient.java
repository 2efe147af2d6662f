package io.kcoord.interop.diff;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestHeader;

/**
 * The one encoder of the suite: a blocking client that sends Kafka's own request classes at an
 * explicit version over a plain socket and parses the answer with Kafka's own parser. The same
 * bytes go to Kafka and to kcoord.
 */
public final class WireClient implements AutoCloseable {
    private final String hostPort;
    private final String clientId;
    private Socket socket;
    private DataInputStream in;
    private DataOutputStream out;
    private int correlationId;

    public WireClient(String hostPort, String clientId) {
        this.hostPort = hostPort;
        this.clientId = clientId;
    }

    private void connect() throws IOException {
        int colon = hostPort.lastIndexOf(':');
        socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(30_000);
        socket.connect(new InetSocketAddress(hostPort.substring(0, colon),
                Integer.parseInt(hostPort.substring(colon + 1))), 10_000);
        in = new DataInputStream(socket.getInputStream());
        out = new DataOutputStream(socket.getOutputStream());
    }

    /** Sends {@code builder} built at {@code version}; returns the parsed response. */
    public AbstractResponse send(AbstractRequest.Builder<?> builder, short version) throws IOException {
        return send(builder, version, clientId);
    }

    AbstractResponse send(AbstractRequest.Builder<?> builder, short version, String clientId)
            throws IOException {
        if (socket == null) connect();
        AbstractRequest request = builder.build(version);
        RequestHeader header = new RequestHeader(builder.apiKey(), version, clientId, ++correlationId);
        ByteBuffer frame = request.serializeWithHeader(header);
        byte[] bytes = new byte[frame.remaining()];
        frame.get(bytes);
        try {
            out.writeInt(bytes.length);
            out.write(bytes);
            out.flush();
            int size = in.readInt();
            byte[] answer = new byte[size];
            in.readFully(answer);
            return AbstractResponse.parseResponse(ByteBuffer.wrap(answer), header);
        } catch (IOException e) {
            close();
            throw new IOException("no answer from " + hostPort + " to " + builder.apiKey()
                    + " v" + version + " (connection closed?)", e);
        }
    }

    @Override
    public void close() {
        if (socket != null) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
        socket = null;
    }
}
