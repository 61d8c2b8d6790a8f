package io.nearstream.benchmarks.workloads;

import java.io.Serializable;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * YSB's static ad -> campaign table, looked up by the ad id's UTF-8 bytes where they lie in the
 * event, and answering a campaign's index instead of its id. The join runs for every view at
 * millions of events per second: a {@code HashMap<String, String>} costs a string per view, its
 * hash and an equals over 36 characters, and the string campaign id then travels through the keyBy
 * exchange; here the join allocates nothing and the window is keyed by a small int, turned back
 * into the campaign id when the window fires ({@link #campaign}).
 *
 * <p>Open addressing over a power-of-two array at most half full; immutable and serializable, so it
 * travels with the functions that use it.
 */
public final class AdCampaignTable implements Serializable {

    private static final long serialVersionUID = 1L;
    private static final VarHandle LONGS =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final int EMPTY = -1;

    private final String[] campaigns; // by index, sorted
    private final byte[][] ads; // by ad index
    private final int[] campaignOfAd; // by ad index
    private final int[] slots; // hash slot -> ad index or EMPTY

    /**
     * @throws IllegalArgumentException when the table is empty
     */
    public AdCampaignTable(Map<String, String> adToCampaign) {
        if (adToCampaign.isEmpty()) {
            throw new IllegalArgumentException("empty ad -> campaign table");
        }
        this.campaigns = new TreeSet<>(adToCampaign.values()).toArray(String[]::new);
        Map<String, String> byAd = new TreeMap<>(adToCampaign); // a fixed order, for determinism
        this.ads = new byte[byAd.size()][];
        this.campaignOfAd = new int[byAd.size()];
        this.slots = new int[Integer.highestOneBit(byAd.size() * 2 - 1) << 1];
        Arrays.fill(slots, EMPTY);
        int ad = 0;
        for (Map.Entry<String, String> e : byAd.entrySet()) {
            ads[ad] = e.getKey().getBytes(StandardCharsets.UTF_8);
            campaignOfAd[ad] = Arrays.binarySearch(campaigns, e.getValue());
            int slot = hash(ads[ad], 0, ads[ad].length) & (slots.length - 1);
            while (slots[slot] != EMPTY) {
                slot = (slot + 1) & (slots.length - 1);
            }
            slots[slot] = ad;
            ad++;
        }
    }

    /** The campaign index of the ad whose UTF-8 id is {@code bytes[from, to)}, or -1. */
    public int campaignIndex(byte[] bytes, int from, int to) {
        int mask = slots.length - 1;
        for (int slot = hash(bytes, from, to) & mask; ; slot = (slot + 1) & mask) {
            int ad = slots[slot];
            if (ad == EMPTY) {
                return -1;
            }
            byte[] id = ads[ad];
            if (Arrays.equals(id, 0, id.length, bytes, from, to)) {
                return campaignOfAd[ad];
            }
        }
    }

    /** The campaign index of {@code adId}, or -1. */
    public int campaignIndex(String adId) {
        byte[] bytes = adId.getBytes(StandardCharsets.UTF_8);
        return campaignIndex(bytes, 0, bytes.length);
    }

    /** The id of the campaign with this index. */
    public String campaign(int index) {
        return campaigns[index];
    }

    /** How many ads the table maps. */
    public int size() {
        return ads.length;
    }

    /** Eight bytes at a time, then the tail; mixed so that ids differing anywhere spread out. */
    private static int hash(byte[] b, int from, int to) {
        long h = to - from;
        int i = from;
        for (; i + Long.BYTES <= to; i += Long.BYTES) {
            h = (h ^ (long) LONGS.get(b, i)) * 0x9E3779B97F4A7C15L;
        }
        for (; i < to; i++) {
            h = (h ^ b[i]) * 0x9E3779B97F4A7C15L;
        }
        return (int) (h ^ (h >>> 29) ^ (h >>> 47));
    }
}
