package zkjepsen.curator;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

/** Curator's private state, read (only read) for the token: the own lock node's path. */
final class Reflect {
    private Reflect() {
    }

    /** The lock node the calling thread holds (InterProcessMutex keeps it per thread); the
     * recipes hand out their mutexes as subclasses we cannot extend, so by reflection. */
    static String lockPath(InterProcessMutex mutex) throws ReflectiveOperationException {
        Method m = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        m.setAccessible(true);
        return (String) m.invoke(mutex);
    }

    /** A recipe's private field (LeaderSelector's mutex). */
    static Object field(Object owner, Class<?> cls, String name)
            throws ReflectiveOperationException {
        Field f = cls.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(owner);
    }
}
