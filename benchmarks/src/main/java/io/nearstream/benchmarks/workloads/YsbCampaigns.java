package io.nearstream.benchmarks.workloads;

import io.nearstream.benchmarks.jobs.Flags;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;

/**
 * The Yahoo Streaming Benchmark's static table: {@value #CAMPAIGNS} campaigns of {@value
 * #ADS_PER_CAMPAIGN} ads each, ids as UUID strings (YSB keeps them in Redis; here the producer
 * writes them to a small "ad_id,campaign_id" CSV file that the job driver loads and ships with the
 * join function). The same seed gives the same ids.
 */
public final class YsbCampaigns {

    public static final int CAMPAIGNS = 100;
    public static final int ADS_PER_CAMPAIGN = 10;

    private static final String HEADER = "ad_id,campaign_id";

    private final Map<String, String> adToCampaign;
    private final List<String> ads;

    private YsbCampaigns(Map<String, String> adToCampaign) {
        this.adToCampaign = Collections.unmodifiableMap(adToCampaign);
        this.ads = List.copyOf(adToCampaign.keySet());
    }

    /** {@value #CAMPAIGNS} × {@value #ADS_PER_CAMPAIGN} ids drawn from {@code seed}. */
    public static YsbCampaigns generate(long seed) {
        Random random = new Random(seed);
        Map<String, String> map = new LinkedHashMap<>();
        for (int c = 0; c < CAMPAIGNS; c++) {
            String campaign = new UUID(random.nextLong(), random.nextLong()).toString();
            for (int a = 0; a < ADS_PER_CAMPAIGN; a++) {
                map.put(new UUID(random.nextLong(), random.nextLong()).toString(), campaign);
            }
        }
        return new YsbCampaigns(map);
    }

    /** Reads a file {@link #write} wrote. */
    public static YsbCampaigns read(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.US_ASCII);
        if (lines.isEmpty() || !lines.get(0).equals(HEADER)) {
            throw new IOException(
                    file + ": not an ad->campaign file (first line must be " + HEADER + ")");
        }
        Map<String, String> map = new LinkedHashMap<>();
        for (int i = 1; i < lines.size(); i++) {
            String[] parts = lines.get(i).split(",", -1);
            if (parts.length != 2
                    || parts[0].isEmpty()
                    || parts[1].isEmpty()
                    || map.put(parts[0], parts[1]) != null) {
                throw new IOException(
                        file
                                + " line "
                                + (i + 1)
                                + ": expected a new \"ad_id,campaign_id\", got \""
                                + lines.get(i)
                                + "\"");
            }
        }
        if (map.isEmpty()) {
            throw new IOException(file + ": no ads");
        }
        return new YsbCampaigns(map);
    }

    /** Writes the table as "ad_id,campaign_id" lines after a header. */
    public void write(Path file) throws IOException {
        List<String> lines = new ArrayList<>(adToCampaign.size() + 1);
        lines.add(HEADER);
        adToCampaign.forEach((ad, campaign) -> lines.add(ad + "," + campaign));
        Path parent = file.toAbsolutePath().getParent();
        Files.createDirectories(parent);
        Files.write(file, lines, StandardCharsets.US_ASCII);
    }

    /** Ad id to campaign id, in generation order. */
    public Map<String, String> adToCampaign() {
        return adToCampaign;
    }

    /** The ad ids, in generation order (ten per campaign, campaign by campaign). */
    public List<String> ads() {
        return ads;
    }

    /**
     * Writes the table {@code YsbProducer --seed S} uses, before any event is made, so a job can be
     * started (and be running) before its producer: {@code YsbCampaigns --seed S --out FILE}.
     */
    public static void main(String[] args) throws IOException {
        Flags flags = new Flags(args, java.util.Set.of("seed", "out"));
        Path out = Path.of(flags.required("out"));
        generate(flags.longValue("seed", 42, Long.MIN_VALUE)).write(out);
        System.out.println(out);
    }
}
