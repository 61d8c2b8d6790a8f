package io.nearstream.flinkcluster;

import io.nearstream.testing.Json;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The few calls of Flink's REST API that the tests make, answered as parsed JSON. */
final class FlinkRest {

    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

    private final String baseUrl;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    FlinkRest(String baseUrl) {
        this.baseUrl = baseUrl;
    }

    /** {@code GET /jobs/:id}: the job's state (RUNNING, FAILED, CANCELED, ...). */
    String jobState(String jobId) throws IOException, InterruptedException {
        return (String) Json.object(get("/jobs/" + jobId)).get("state");
    }

    /** {@code GET /jobs/:id/exceptions}: the root exception, or "" when there is none. */
    String rootException(String jobId) throws IOException, InterruptedException {
        Object root = Json.object(get("/jobs/" + jobId + "/exceptions")).get("root-exception");
        return root == null ? "" : root.toString();
    }

    /** {@code PATCH /jobs/:id?mode=cancel}. */
    void cancel(String jobId) throws IOException, InterruptedException {
        send(
                HttpRequest.newBuilder(URI.create(baseUrl + "/jobs/" + jobId + "?mode=cancel"))
                        .method("PATCH", HttpRequest.BodyPublishers.noBody()));
    }

    /** {@code GET /taskmanagers}: the resource ids of the registered TaskManagers. */
    List<String> taskManagers() throws IOException, InterruptedException {
        List<String> ids = new ArrayList<>();
        for (Object tm : (List<?>) Json.object(get("/taskmanagers")).get("taskmanagers")) {
            ids.add((String) ((Map<?, ?>) tm).get("id"));
        }
        return ids;
    }

    /** {@code GET /taskmanagers/:id/metrics?get=...}: the values of the named metrics it has. */
    Map<String, String> taskManagerMetrics(String resourceId, List<String> names)
            throws IOException, InterruptedException {
        String get = URLEncoder.encode(String.join(",", names), StandardCharsets.UTF_8);
        Map<String, String> values = new LinkedHashMap<>();
        for (Object metric :
                Json.array(get("/taskmanagers/" + resourceId + "/metrics?get=" + get))) {
            Map<?, ?> m = (Map<?, ?>) metric;
            values.put((String) m.get("id"), String.valueOf(m.get("value")));
        }
        return values;
    }

    /** {@code GET path}: the body of a 2xx answer; fails with the status and body otherwise. */
    String get(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(baseUrl + path)).GET());
    }

    private String send(HttpRequest.Builder request) throws IOException, InterruptedException {
        HttpRequest r = request.timeout(REQUEST_TIMEOUT).build();
        HttpResponse<String> response =
                http.send(r, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        if (response.statusCode() / 100 != 2) {
            throw new IOException(
                    r.method()
                            + " "
                            + r.uri()
                            + " answered "
                            + response.statusCode()
                            + ": "
                            + response.body());
        }
        return response.body();
    }
}
