package io.kcoord.interop.diff;

import java.util.Map;

/**
 * One scripted scenario, run on both servers of a pair with the same names. {@code topics}
 * (name -> partitions) are created on both before the suite starts.
 */
record Scenario(String name, Pair pair, Map<String, Integer> topics, Body body) {
    enum Pair { MAIN, ALT, SECURED }

    interface Body {
        void run(Side s) throws Exception;
    }
}
